//! `gnnkern-bench`: see `gnnkern_bench::cli` and docs/BENCHMARKS.md.

fn main() -> std::process::ExitCode {
    // `RUST_LOG=debug` shows gnnkern's decisions (cache budget, traffic
    // model, blocking trials) on stderr; silent by default.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    gnnkern_bench::cli::main()
}
