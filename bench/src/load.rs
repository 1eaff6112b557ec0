//! What the load benches share: keep-alive connections sending requests back to back, the merged
//! latency report, and the seeded random numbers behind generated events and request bodies.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::bail;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One request to send, built anew for each send.
pub type Request = hyper::Request<Full<Bytes>>;

/// An HTTP/1 keep-alive connection (no Nagle delay: the requests are small and back to back).
pub async fn connect(address: SocketAddr) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

pub struct Report {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: Duration,
    latency_us: Histogram<u64>,
    connections: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.elapsed.as_secs_f64();
        let ms = |q: f64| self.latency_us.value_at_quantile(q) as f64 / 1000.0;
        write!(
            f,
            "{} requests ({} errors) in {seconds:.1} s over {} connections: {:.0} req/s; \
             latency p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.requests,
            self.errors,
            self.connections,
            self.requests as f64 / seconds,
            ms(0.5),
            ms(0.9),
            ms(0.99),
            self.latency_us.max() as f64 / 1000.0,
        )
    }
}

/// `connections` keep-alive connections to `address`, each sending the requests of its own
/// source (one `sources()` call per connection) back to back for `duration`.
pub async fn load<S, R>(
    address: SocketAddr,
    connections: usize,
    duration: Duration,
    mut sources: S,
) -> anyhow::Result<Report>
where
    S: FnMut() -> R,
    R: FnMut() -> anyhow::Result<Request> + Send + 'static,
{
    if connections == 0 {
        bail!("--connections must be at least 1");
    }
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(worker(address, deadline, sources())))
        .collect();
    let mut latency_us = Histogram::<u64>::new(3)?;
    let (mut requests, mut errors) = (0, 0);
    for worker in workers {
        let (histogram, worker_errors) = worker.await??;
        requests += histogram.len();
        errors += worker_errors;
        latency_us.add(&histogram)?;
    }
    Ok(Report {
        requests,
        errors,
        elapsed: started.elapsed(),
        latency_us,
        connections,
    })
}

/// One connection: requests back to back until the deadline. A non-2xx answer or a broken
/// connection counts as an error (and the connection is made again).
async fn worker(
    address: SocketAddr,
    deadline: Instant,
    mut next: impl FnMut() -> anyhow::Result<Request>,
) -> anyhow::Result<(Histogram<u64>, u64)> {
    let mut sender = connect(address).await?;
    let mut histogram = Histogram::<u64>::new(3)?;
    let mut errors = 0;
    while Instant::now() < deadline {
        let request = next()?;
        let sent = Instant::now();
        let ok = match sender.send_request(request).await {
            Ok(response) => {
                let ok = response.status().is_success();
                ok && response.into_body().collect().await.is_ok()
            }
            Err(_) => false,
        };
        histogram.record(sent.elapsed().as_micros() as u64)?;
        if !ok {
            errors += 1;
            if sender.ready().await.is_err() {
                sender = connect(address).await?;
            }
        }
    }
    Ok((histogram, errors))
}

/// SplitMix64: small, fast (the client takes little of the CPU the server is measured on), and
/// the same sequence everywhere for a seed (the generator's events depend on it).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// An index drawn with the given weights.
    pub(crate) fn weighted(&mut self, weights: &[u64]) -> usize {
        let mut roll = self.below(weights.iter().sum());
        for (index, weight) in weights.iter().enumerate() {
            if roll < *weight {
                return index;
            }
            roll -= weight;
        }
        weights.len() - 1
    }

    /// Skewed towards 0: a few items get most of the draws.
    pub(crate) fn skewed(&mut self, n: usize, power: f64) -> usize {
        ((n as f64 * self.unit().powf(power)) as usize).min(n - 1)
    }

    /// Standard normal (Box-Muller).
    pub(crate) fn gauss(&mut self) -> f64 {
        let u = 1.0 - self.unit();
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generator's events for a seed rest on this sequence: runs compared across commits
    /// must see the same numbers.
    #[test]
    fn the_sequence_for_a_seed_does_not_change() {
        let mut rng = Rng(42);
        let drawn: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            drawn,
            [
                0xBDD7_3226_2FEB_6E95,
                0x28EF_E333_B266_F103,
                0x4752_6757_130F_9F52
            ]
        );
        assert!((0..1000).all(|_| rng.below(7) < 7));
    }
}
