// Import, capture and queries allocate many small strings; mimalloc serves them faster than
// the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    local::allocator::start_with_options();
    local::cli::main()
}
