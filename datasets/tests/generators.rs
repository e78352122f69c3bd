//! Generators: spec parsing round trips, determinism (also across thread
//! counts), and statistics each generator promises.

use gnnkern_datasets::{Dataset, DatasetError, GraphSpec, generate};

#[test]
fn specs_round_trip_through_display() {
    for s in [
        "uniform:1000:5000:42",
        "rmat:10:16:7",
        "rmat:10:16:7:0.45:0.15:0.15",
        "sbm:1000:4:0.05:0.001:9",
        "sbm:10:2:1.0:0.0:1",
        "chain:17",
        "star:9",
    ] {
        let spec: GraphSpec = s.parse().unwrap();
        assert_eq!(spec.to_string(), s);
        assert_eq!(spec.to_string().parse::<GraphSpec>().unwrap(), spec);
    }
    // Explicit Graph500 parameters print the short form.
    assert_eq!("rmat:5:2:1:0.57:0.19:0.19".parse::<GraphSpec>().unwrap().to_string(), "rmat:5:2:1");
    let odd = GraphSpec::Rmat { scale: 3, avg_degree: 2, a: 0.1 + 0.2, b: 1.0 / 3.0, c: 0.0, seed: u64::MAX };
    assert_eq!(odd.to_string().parse::<GraphSpec>().unwrap(), odd);
}

#[test]
fn bad_specs_say_what_is_wrong() {
    for (s, want) in [
        ("grid:10", "unknown generator"),
        ("uniform:10:20", "uniform:N:M:SEED"),
        ("uniform:ten:20:1", "N = \"ten\""),
        ("uniform:0:5:1", "at least one node"),
        ("rmat:10:16:-1", "seed"),
        ("rmat:41:1:1", "above 40"),
        ("rmat:10:16:1:0.5:0.5", "rmat:SCALE:AVG_DEG:SEED[:A:B:C]"),
        ("rmat:10:16:1:0.6:0.3:0.2", "exceeds 1"),
        ("rmat:10:16:1:0.6:-0.1:0.2", "b = -0.1"),
        ("sbm:100:0:0.1:0.1:1", "k = 0"),
        ("sbm:10:11:0.1:0.1:1", "k = 11"),
        ("sbm:100:2:1.5:0.1:1", "p_in = 1.5"),
        ("sbm:100:2:0.1:NaN:1", "p_out = NaN"),
        ("chain", "chain:N"),
        ("", "unknown generator"),
    ] {
        match generate(s).unwrap_err() {
            DatasetError::BadSpec { spec, problem } => {
                assert_eq!(spec, s);
                assert!(problem.contains(want), "{s:?}: got {problem:?}, want {want:?}");
            }
            e => panic!("{s:?}: wrong error {e}"),
        }
    }
}

fn in_pool(threads: usize, spec: &str) -> Dataset {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| generate(spec).unwrap())
}

#[test]
fn generation_is_deterministic_across_runs_and_thread_counts() {
    for spec in ["uniform:5000:200000:3", "rmat:12:40:5", "sbm:3000:6:0.02:0.002:11"] {
        let one = in_pool(1, spec);
        let two = in_pool(2, spec);
        let three = in_pool(3, spec);
        assert_eq!(one, two, "{spec}");
        assert_eq!(one, three, "{spec}");
        assert_eq!(one.validate().map_err(|e| e.to_string()), Ok(()));
    }
    assert_ne!(generate("rmat:10:8:1").unwrap().src, generate("rmat:10:8:2").unwrap().src);
    assert_ne!(generate("uniform:100:50:1").unwrap().dst, generate("uniform:100:50:2").unwrap().dst);
}

#[test]
fn uniform_has_exact_edge_count_and_flat_degrees() {
    let ds = generate("uniform:1000:100000:8").unwrap();
    assert_eq!((ds.num_nodes, ds.num_edges()), (1000, 100_000));
    assert_eq!(ds.meta.as_ref().unwrap()["generator"], "uniform:1000:100000:8");
    // Binomial(100000, 1/1000): mean 100, sd ~10; all degrees within 6 sd.
    for deg in [ds.in_degrees(), ds.out_degrees()] {
        assert!(deg.iter().all(|&d| (40..=160).contains(&d)), "{:?}", deg.iter().max());
    }
    assert_eq!(generate("uniform:7:0:1").unwrap().num_edges(), 0);
}

#[test]
fn rmat_is_skewed_as_its_parameters_say() {
    let ds = generate("rmat:14:16:1").unwrap();
    let (n, m) = (1usize << 14, 16usize << 14);
    assert_eq!((ds.num_nodes, ds.num_edges()), (n, m));
    // The top bit of the source is 1 with probability c + d = 0.24, of the
    // destination with b + d = 0.24 (sd of the fraction ~ 0.001).
    let half = (n / 2) as i64;
    let bottom = ds.src.iter().filter(|&&s| s >= half).count() as f64 / m as f64;
    let right = ds.dst.iter().filter(|&&d| d >= half).count() as f64 / m as f64;
    assert!((bottom - 0.24).abs() < 0.01, "{bottom}");
    assert!((right - 0.24).abs() < 0.01, "{right}");
    // Degree skew: node 0 expects m * (a+b)^14 = 262144 * 0.76^14 ~ 5.4k
    // out-edges against a mean of 16; and many nodes are isolated.
    let out = ds.out_degrees();
    assert!(out[0] > 100 * 16, "out-degree of node 0: {}", out[0]);
    assert_eq!(out.iter().enumerate().max_by_key(|&(_, d)| d).unwrap().0, 0);
    assert!(out.iter().filter(|&&d| d == 0).count() > n / 10);
    // Uniform parameters give a flat graph.
    let flat = generate("rmat:14:16:1:0.25:0.25:0.25").unwrap();
    assert!(*flat.out_degrees().iter().max().unwrap() < 64);
}

#[test]
fn sbm_block_densities_match_p_in_and_p_out() {
    let (n, k, p_in, p_out) = (4000usize, 4usize, 0.05, 0.004);
    let ds = generate(&format!("sbm:{n}:{k}:{p_in}:{p_out}:3")).unwrap();
    let labels = ds.labels.clone().unwrap();
    for b in 0..k as i32 {
        assert_eq!(labels.iter().filter(|&&l| l == b).count(), n / k);
    }
    let mut pairs: std::collections::HashSet<(i64, i64)> = Default::default();
    let (mut inside, mut across) = (0usize, 0usize);
    for (&u, &v) in ds.src.iter().zip(&ds.dst) {
        assert_ne!(u, v, "self-loop");
        assert!(pairs.insert((u, v)), "duplicate edge {u}->{v}");
        if u < v {
            if labels[u as usize] == labels[v as usize] { inside += 1 } else { across += 1 }
        }
    }
    for (&u, &v) in ds.src.iter().zip(&ds.dst) {
        assert!(pairs.contains(&(v, u)), "{u}->{v} without its reverse");
    }
    let s = (n / k) as f64;
    let d_in = inside as f64 / (k as f64 * s * (s - 1.0) / 2.0);
    let d_out = across as f64 / ((k * (k - 1) / 2) as f64 * s * s);
    // ~50k and ~24k edges: relative sd under 1%.
    assert!((d_in / p_in - 1.0).abs() < 0.04, "{d_in}");
    assert!((d_out / p_out - 1.0).abs() < 0.05, "{d_out}");
}

#[test]
fn sbm_extremes_are_exact() {
    // p_in = 1, p_out = 0: two complete blocks of 5 (10 undirected edges each).
    let ds = generate("sbm:10:2:1.0:0.0:1").unwrap();
    assert_eq!(ds.num_edges(), 40);
    let full = generate("sbm:9:3:1.0:1.0:4").unwrap();
    assert_eq!(full.num_edges(), 9 * 8);
    assert_eq!(generate("sbm:50:5:0.0:0.0:4").unwrap().num_edges(), 0);
    // Uneven blocks: 10 nodes in 3 blocks.
    let uneven = generate("sbm:10:3:1.0:0.0:1").unwrap();
    let sizes: Vec<usize> =
        (0..3).map(|b| uneven.labels.as_ref().unwrap().iter().filter(|&&l| l == b).count()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 10);
    assert_eq!(uneven.num_edges(), sizes.iter().map(|s| s * (s - 1)).sum::<usize>());
}

#[test]
fn chain_and_star_shapes() {
    let c = generate("chain:5").unwrap();
    assert_eq!((c.src, c.dst), (vec![0, 1, 2, 3], vec![1, 2, 3, 4]));
    let s = generate("star:4").unwrap();
    assert_eq!((s.src.clone(), s.dst.clone()), (vec![1, 2, 3], vec![0, 0, 0]));
    assert_eq!(s.in_degrees(), vec![3, 0, 0, 0]);
    assert_eq!(generate("chain:0").unwrap().num_edges(), 0);
    assert_eq!(generate("chain:1").unwrap().num_edges(), 0);
}
