//! `gnnkern-bench`: see `gnnkern_bench::cli` and docs/BENCHMARKS.md.

fn main() -> std::process::ExitCode {
    gnnkern_bench::cli::main()
}
