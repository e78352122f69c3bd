//! Generates (or loads) a graph, prints its size and how long that took,
//! and optionally writes it in the directory format.
//!
//! ```text
//! cargo run --release -p gnnkern-datasets --example generate -- rmat:20:16:1 [OUT_DIR [int32|int64]]
//! ```

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(spec) = args.first() else {
        return Err("usage: generate DIR_OR_SPEC [OUT_DIR [int32|int64]]".into());
    };
    let t = Instant::now();
    let ds = gnnkern_datasets::open(spec)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{}: {} nodes, {} edges in {secs:.3} s ({} threads)",
        ds.name,
        ds.num_nodes,
        ds.num_edges(),
        rayon::current_num_threads()
    );
    if let Some(out) = args.get(1) {
        let width = args.get(2).map_or(Ok(Default::default()), |w| w.parse())?;
        let t = Instant::now();
        gnnkern_datasets::write_dir(&ds, std::path::Path::new(out), width)?;
        println!("wrote {out} ({width}) in {:.3} s", t.elapsed().as_secs_f64());
    }
    Ok(())
}
