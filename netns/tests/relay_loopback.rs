//! The loopback relay against what it was configured with, without root: the testbed's fidelity
//! checks (RTT, UDP goodput, loss per path and direction) for the `pb-high` scenarios, a timed
//! "2s down" event on real datagrams, plus the relay's own cost and its error and shutdown
//! behaviour.
//!
//! The measurements share two CPU cores with whatever else runs, so they take turns (one lock)
//! instead of competing with each other for them.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mpquic_netns::error::NetnsError;
use mpquic_netns::loopback::LoopbackTestbed;
use mpquic_netns::probe::{Direction, ProbeServer, Prober};
use mpquic_netns::relay::{Relay, RelayPath};
use mpquic_scenario::events::TimedEvent;
use mpquic_scenario::link::LinkConfig;
use mpquic_scenario::link::IP_UDP_OVERHEAD;
use mpquic_scenario::{PathSpec, Scenario};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const ANY: &str = "127.0.0.1:0";

fn any() -> SocketAddr {
    ANY.parse().expect("loopback address")
}

/// A relay for every path of `scenario`, each in front of its own probe server.
fn testbed(scenario: &str) -> LoopbackTestbed {
    LoopbackTestbed::start(Scenario::by_name(scenario).expect("known scenario"))
        .expect("testbed starts")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
fn pb_high_rtt_median_is_twice_the_one_way_delay() {
    let _turn = serial();
    let bed = testbed("pb-high");
    const SIZE: usize = 64;
    for (k, spec) in bed.scenario().paths.iter().enumerate() {
        let stats = bed.prober(k).expect("prober").rtt(100, SIZE).expect("rtt");
        let relay = bed.relay().stats()[k];
        eprintln!(
            "path {k}: relay lateness up mean {:?} max {:?}, down mean {:?} max {:?}",
            relay.uplink.mean_lateness(),
            Duration::from_nanos(relay.uplink.late_max_ns),
            relay.downlink.mean_lateness(),
            Duration::from_nanos(relay.downlink.late_max_ns),
        );
        // Each direction also serializes the probe (92 wire bytes: 74 us at 10 Mbit/s, 18 us at
        // 40 Mbit/s); negligible against the 1 ms bar but counted anyway.
        let serialization =
            Duration::from_secs_f64(((SIZE + IP_UDP_OVERHEAD) * 8) as f64 / spec.rate_bps as f64);
        let one_way = spec.one_way_delay + serialization;
        let expected = one_way * 2;
        eprintln!(
            "path {k}: rtt median {:.3} ms (expected {:.3}; min {:.3} p10 {:.3} p90 {:.3} max {:.3}; \
             {} samples, {} lost); one-way up {:.3} down {:.3} ms (expected {:.3})",
            ms(stats.median),
            ms(expected),
            ms(stats.min),
            ms(stats.p10),
            ms(stats.p90),
            ms(stats.max),
            stats.samples,
            stats.lost,
            ms(stats.uplink_median),
            ms(stats.downlink_median),
            ms(one_way),
        );
        assert!(stats.samples >= 100);
        assert!(
            stats.median.abs_diff(expected) <= Duration::from_millis(1),
            "path {k}: rtt median {:?}, expected {expected:?}",
            stats.median
        );
        for (dir, owd) in [("up", stats.uplink_median), ("down", stats.downlink_median)] {
            assert!(
                owd.abs_diff(one_way) <= Duration::from_millis(1),
                "path {k} {dir}: one-way median {owd:?}, expected {one_way:?}"
            );
        }
        // Never early: the link holds every packet at least its delay.
        assert!(stats.min >= spec.one_way_delay * 2);
    }
}

#[test]
fn pb_high_udp_goodput_is_the_configured_rate() {
    let _turn = serial();
    let bed = testbed("pb-high");
    // Largest datagram that fits a 1500-byte IP packet, so headers cost the least (1.9%).
    const SIZE: usize = 1500 - IP_UDP_OVERHEAD;
    const DURATION: Duration = Duration::from_secs(2);
    for (k, spec) in bed.scenario().paths.iter().enumerate() {
        let prober = bed.prober(k).expect("prober");
        for dir in [Direction::Uplink, Direction::Downlink] {
            let stats = prober
                .goodput(dir, spec.rate_bps, DURATION, SIZE)
                .expect("goodput");
            let rate = spec.rate_bps as f64;
            eprintln!(
                "path {k} {dir:?}: goodput {:.3} Mbit/s ({:+.2}% of {:.0}), on the wire {:.3} \
                 ({:+.2}%); {} of {} datagrams over {:.3} s",
                stats.goodput_bps / 1e6,
                (stats.goodput_bps / rate - 1.0) * 100.0,
                rate / 1e6,
                stats.wire_bps / 1e6,
                (stats.wire_bps / rate - 1.0) * 100.0,
                stats.received,
                stats.sent,
                stats.span.as_secs_f64(),
            );
            assert!(
                (stats.goodput_bps / rate - 1.0).abs() <= 0.05,
                "path {k} {dir:?}: goodput {} vs {rate}",
                stats.goodput_bps
            );
        }
    }
    for (k, s) in bed.relay().stats().iter().enumerate() {
        eprintln!("path {k}: {s:?}");
        for d in [s.uplink, s.downlink] {
            assert_eq!(d.dropped_overflow, 0, "path {k}: relay hard cap hit");
            assert_eq!(d.send_errors, 0);
        }
    }
}

#[test]
fn pb_high_lossy_loss_is_inside_the_99_percent_binomial_interval() {
    let _turn = serial();
    let bed = testbed("pb-high-lossy");
    // Small datagrams at half the rate: 5000 of them take 0.2-0.8 s and never fill the queue,
    // so every loss is the link's random loss.
    const PACKETS: u64 = 5000;
    const SIZE: usize = 200;
    for (k, spec) in bed.scenario().paths.iter().enumerate() {
        let prober = bed.prober(k).expect("prober");
        for dir in [Direction::Uplink, Direction::Downlink] {
            let stats = prober
                .loss(dir, PACKETS, SIZE, spec.rate_bps / 2, spec.drop_rate, 0.99)
                .expect("loss");
            eprintln!(
                "path {k} {dir:?}: loss {:.3}% ({} of {}), 99% interval around {}%: \
                 [{:.3}%, {:.3}%] inside: {}; Wilson around measured [{:.3}%, {:.3}%]",
                stats.loss * 100.0,
                stats.sent - stats.received,
                stats.sent,
                stats.expected * 100.0,
                stats.interval.0 * 100.0,
                stats.interval.1 * 100.0,
                stats.inside,
                stats.wilson.0 * 100.0,
                stats.wilson.1 * 100.0,
            );
            assert_eq!(stats.sent, PACKETS);
            // The link's own losses must sit in the interval, as a share of the datagrams the
            // relay read. The host may lose more on a loaded machine (socket buffers of a
            // starved reader, before or after the relay), which the end-to-end figure
            // includes but the emulator is not to blame for: a CI run beside a build lost 60
            // of 5000 that way. Only a host that lost a tenth of them makes the run no check.
            let link = bed.relay().stats()[k];
            let link = match dir {
                Direction::Uplink => link.uplink,
                Direction::Downlink => link.downlink,
            };
            let lost = stats.sent - stats.received;
            let host = lost.saturating_sub(link.dropped_loss);
            assert!(
                host <= PACKETS / 10,
                "path {k} {dir:?}: {host} packets lost outside the link: {stats:?}"
            );
            let (low, high) = stats.interval;
            let link_loss = link.dropped_loss as f64 / link.received.max(1) as f64;
            assert!(
                (low..=high).contains(&link_loss),
                "path {k} {dir:?}: link loss {link_loss} outside [{low}, {high}]: {stats:?}"
            );
        }
    }
    for (k, s) in bed.relay().stats().iter().enumerate() {
        eprintln!("path {k}: {s:?}");
        for d in [s.uplink, s.downlink] {
            assert_eq!(
                d.dropped_queue, 0,
                "path {k}: queue drops would bias the loss"
            );
            assert_eq!(d.dropped_overflow, 0);
        }
    }
}

/// The emulator's own cost: 2 paths x 50 Mbit/s (offered at 1.1x, so each link is saturated),
/// CPU time of the relay threads only, over the time they forwarded.
#[test]
fn relay_forwards_2_x_50_mbit_cheaply() {
    let _turn = serial();
    let spec = PathSpec::new(50_000_000, Duration::from_millis(10));
    let servers: Vec<_> = (0..2)
        .map(|_| ProbeServer::start(any()).expect("probe server"))
        .collect();
    let relay = Relay::start(
        servers
            .iter()
            .map(|s| RelayPath {
                listen: any(),
                server: s.local_addr(),
                uplink: LinkConfig::from_spec(&spec, 1),
                downlink: LinkConfig::from_spec(&spec, 2),
            })
            .collect(),
    )
    .expect("relay");
    let Some(cpu_before) = relay.cpu_time() else {
        eprintln!("no /proc/self/task schedstat here; cost not measured");
        return;
    };
    let started = Instant::now();
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = relay
            .local_addrs()
            .iter()
            .map(|&addr| {
                s.spawn(move || {
                    Prober::new(addr).expect("prober").goodput(
                        Direction::Uplink,
                        spec.rate_bps,
                        Duration::from_secs(2),
                        1472,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("prober thread"))
            .collect()
    });
    let wall = started.elapsed();
    let cpu = relay.cpu_time().expect("cpu time") - cpu_before;
    let share = cpu.as_secs_f64() / wall.as_secs_f64();
    for r in &results {
        let r = r.as_ref().expect("goodput");
        eprintln!("  forwarded {:.2} Mbit/s", r.goodput_bps / 1e6);
    }
    eprintln!(
        "relay cpu: {:.3} s over {:.3} s wall = {:.1}% of one core for 2 x 50 Mbit/s",
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        share * 100.0
    );
    // The design's bar is 20% of a core, measured by `cargo xtask testbed cost` (README); only
    // a loose guard here, since a noisy machine inflates it.
    assert!(share < 0.5, "relay used {:.1}% of a core", share * 100.0);
}

#[test]
fn a_listen_port_in_use_is_an_error_naming_it() {
    let _turn = serial();
    let taken = UdpSocket::bind(any()).expect("bind");
    let addr = taken.local_addr().expect("addr");
    let server = ProbeServer::start(any()).expect("server");
    let link = LinkConfig::new(10_000_000, Duration::from_millis(5));
    let err = Relay::start(vec![
        RelayPath {
            listen: any(),
            server: server.local_addr(),
            uplink: link.clone(),
            downlink: link.clone(),
        },
        RelayPath {
            listen: addr,
            server: server.local_addr(),
            uplink: link.clone(),
            downlink: link,
        },
    ])
    .expect_err("port in use");
    assert!(matches!(err, NetnsError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    assert_eq!(relay_threads(), 0, "nothing left running");
}

#[test]
fn an_invalid_link_is_rejected_before_anything_is_bound() {
    let _turn = serial();
    let listen = {
        let s = UdpSocket::bind(any()).expect("bind");
        s.local_addr().expect("addr")
    };
    let bad = LinkConfig::new(0, Duration::from_millis(5));
    let err = Relay::start(vec![RelayPath {
        listen,
        server: any(),
        uplink: LinkConfig::new(1_000_000, Duration::ZERO),
        downlink: bad,
    }])
    .expect_err("zero rate");
    assert!(matches!(err, NetnsError::Link(_)), "{err:?}");
    UdpSocket::bind(listen).expect("the listen port was left free");
}

/// Relay threads alive in this process (they are named `rly<id>p<path><role>`).
fn relay_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("rly"))
        })
        .count()
}

#[test]
fn stop_and_drop_join_every_thread() {
    let _turn = serial();
    let server = ProbeServer::start(any()).expect("server");
    let link = LinkConfig::new(10_000_000, Duration::from_millis(5));
    let path = RelayPath {
        listen: any(),
        server: server.local_addr(),
        uplink: link.clone(),
        downlink: link,
    };
    let relay = Relay::start(vec![path.clone(), path.clone()]).expect("relay");
    if std::fs::metadata("/proc/self/task").is_ok() {
        // A thread names itself once running, so give them a moment.
        let deadline = Instant::now() + Duration::from_secs(2);
        while relay_threads() < 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(relay_threads(), 1, "one thread for every path");
    }
    // Some traffic, so the thread is mid-wait when asked to stop.
    let prober = Prober::new(relay.local_addrs()[0]).expect("prober");
    prober.rtt(3, 64).expect("rtt");
    let t = Instant::now();
    relay.stop();
    assert!(t.elapsed() < Duration::from_millis(500), "stop is prompt");
    assert_eq!(relay_threads(), 0);

    let relay = Relay::start(vec![path]).expect("relay");
    drop(relay);
    assert_eq!(relay_threads(), 0);
}

/// A path scheduled down at t = 2 s, measured on real datagrams: a steady stream (one small
/// datagram every 5 ms for 3 s) through the relay's uplink to a receiver here. What was sent
/// before 1.9 s arrives (the 0.1 s is room for a starved relay thread to read a datagram late),
/// and nothing sent at or after 2 s does. Send times are on the relay's own clock
/// ([`Relay::started`]), and the relay timestamps a datagram after it was sent, so the 2 s
/// line needs no margin.
#[test]
fn a_path_scheduled_down_at_2s_drops_everything_from_then_on() {
    let _turn = serial();
    const PACE: Duration = Duration::from_millis(5);
    const SEND_FOR: Duration = Duration::from_secs(3);
    const DOWN_AT: Duration = Duration::from_secs(2);
    const SURELY_BEFORE: Duration = Duration::from_millis(1900);
    let receiver = UdpSocket::bind(any()).expect("receiver");
    receiver
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("read timeout");
    let mut uplink = LinkConfig::new(10_000_000, Duration::from_millis(5));
    uplink.events = vec![TimedEvent::parse("2s down").expect("event")];
    let relay = Relay::start(vec![RelayPath {
        listen: any(),
        server: receiver.local_addr().expect("receiver addr"),
        uplink,
        downlink: LinkConfig::new(10_000_000, Duration::from_millis(5)),
    }])
    .expect("relay");
    let clock = relay.started();
    let sender = UdpSocket::bind(any()).expect("sender");
    sender.connect(relay.local_addrs()[0]).expect("connect");

    let t = Instant::now();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (sent_at, arrived) = std::thread::scope(|s| {
        let collector = s.spawn(|| {
            let mut arrived = Vec::new();
            let mut buf = [0u8; 64];
            // Until a second (far beyond the 5 ms delay) after the sender is done.
            let mut done_at = None::<Instant>;
            loop {
                match receiver.recv(&mut buf) {
                    Ok(n) if n >= 4 => {
                        arrived.push(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
                    }
                    _ => {}
                }
                if done.load(std::sync::atomic::Ordering::Acquire) {
                    let since = *done_at.get_or_insert_with(Instant::now);
                    if since.elapsed() >= Duration::from_secs(1) {
                        break arrived;
                    }
                }
            }
        });
        let mut sent_at = Vec::new();
        let mut payload = [0u8; 64];
        for seq in 0u32.. {
            let due = PACE * seq;
            if due >= SEND_FOR {
                break;
            }
            if let Some(wait) = (clock + due).checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            payload[..4].copy_from_slice(&seq.to_be_bytes());
            // Taken before the send: the relay can only see the datagram later.
            let at = clock.elapsed();
            sender.send(&payload).expect("send");
            sent_at.push(at);
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        (sent_at, collector.join().expect("receiver thread"))
    });
    let took = t.elapsed();

    let arrived: std::collections::HashSet<u32> = arrived.into_iter().collect();
    let got = |seq: usize| arrived.contains(&u32::try_from(seq).expect("seq"));
    let early: Vec<usize> = (0..sent_at.len())
        .filter(|&i| sent_at[i] < SURELY_BEFORE)
        .collect();
    let late: Vec<usize> = (0..sent_at.len())
        .filter(|&i| sent_at[i] >= DOWN_AT)
        .collect();
    let between = sent_at.len() - early.len() - late.len();
    let early_arrived = early.iter().filter(|&&i| got(i)).count();
    let late_arrived: Vec<_> = late
        .iter()
        .filter(|&&i| got(i))
        .map(|&i| (i, sent_at[i]))
        .collect();
    let between_arrived = (0..sent_at.len())
        .filter(|&i| sent_at[i] >= SURELY_BEFORE && sent_at[i] < DOWN_AT && got(i))
        .count();
    let stats = relay.stats()[0].uplink;
    eprintln!(
        "sent {} datagrams over {:.3} s (test took {took:?}): before 1.9 s {} of {} arrived; \
         1.9-2.0 s {between_arrived} of {between}; from 2.0 s {} of {} arrived; relay uplink: \
         received {} forwarded {} dropped_down {}",
        sent_at.len(),
        sent_at.last().map_or(0.0, Duration::as_secs_f64),
        early_arrived,
        early.len(),
        late_arrived.len(),
        late.len(),
        stats.received,
        stats.forwarded,
        stats.dropped_down,
    );
    // Nearly all: a loaded host may lose the odd datagram outside the link.
    assert!(
        early_arrived * 100 >= early.len() * 99,
        "{early_arrived} of {} sent before 1.9 s arrived",
        early.len()
    );
    assert!(
        late_arrived.is_empty(),
        "sent after the path went down, yet arrived: {late_arrived:?}"
    );
    // Cross-check against the link's own counters: every datagram sent from 2 s on was
    // dropped as down, and none sent before 1.9 s was.
    // (Less any the host lost before the relay read them.)
    let lost_before_relay = u64::try_from(sent_at.len())
        .expect("count")
        .saturating_sub(stats.received);
    let late_count = u64::try_from(late.len()).expect("count");
    assert!(
        stats.dropped_down >= late_count.saturating_sub(lost_before_relay),
        "dropped_down {} < {late_count} sent after 2 s: {stats:?}",
        stats.dropped_down
    );
    assert!(
        stats.dropped_down <= u64::try_from(late.len() + between).expect("count"),
        "dropped_down {} counts datagrams sent before 1.9 s: {stats:?}",
        stats.dropped_down
    );
    assert_eq!(stats.dropped_queue + stats.dropped_loss, 0, "{stats:?}");
}
