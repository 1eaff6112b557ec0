fn main() -> std::process::ExitCode {
    local::cli::main()
}
