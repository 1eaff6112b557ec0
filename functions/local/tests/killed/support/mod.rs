//! What the kill tests share: `analytics serve` started as its own process on a data dir.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `analytics serve`, killed (SIGKILL) and reaped when dropped.
pub struct Server {
    pub process: Child,
    pub address: String,
}

impl Server {
    pub fn kill(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `analytics serve` on `data_dir` and an ephemeral port, and what it printed before serving.
pub fn serve(data_dir: &Path) -> (Server, Vec<String>) {
    let process = Command::new(env!("CARGO_BIN_EXE_analytics"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env_remove("ANALYTICS_QUEUE_URL")
        .env_remove("ANALYTICS_BACKEND")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the analytics binary starts");
    let mut server = Server {
        process,
        address: String::new(),
    };
    let stdout = server.process.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut printed = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("stdout");
        if let Some(address) = line.strip_prefix("Serving on http://") {
            server.address = address.trim().to_owned();
            std::thread::spawn(move || lines.for_each(drop));
            return (server, printed);
        }
        printed.push(line);
    }
    panic!("analytics serve stopped before serving: {printed:?}");
}
