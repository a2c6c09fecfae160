//! The rendezvous on any machine: ranks in threads, or in two processes,
//! exchange a made-up id over loopback TCP and through a temporary file;
//! a rank that never arrives is a timeout error within the deadline;
//! peers that disagree are told why. No GPU and no NCCL involved.

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use unigpu::comm::rendezvous::CommId;
use unigpu::{Error, Rendezvous};

fn fake_id(seed: u8) -> CommId {
    std::array::from_fn(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
}

/// A loopback address nothing listens on (the port was free a moment ago).
fn free_addr() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    addr
}

/// Runs one rendezvous per `(rendezvous, local ranks)` in threads; returns
/// each one's result, in order.
fn meet(parts: Vec<(Rendezvous, usize)>, id: CommId) -> Vec<unigpu::Result<CommId>> {
    let handles: Vec<_> = parts
        .into_iter()
        .map(|(r, local)| {
            thread::spawn(move || {
                r.exchange(local, || {
                    assert_eq!(r.rank(), 0, "only rank 0 makes the id");
                    Ok(id)
                })
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn tmp_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("rendezvous")
}

#[test]
fn two_ranks_meet_over_loopback_tcp() {
    let addr = free_addr();
    let id = fake_id(7);
    // Rank 1 first: it must retry until rank 0 listens.
    let results = meet(
        vec![
            (Rendezvous::tcp(&addr, 2, 1), 1),
            (Rendezvous::tcp(&addr, 2, 0), 1),
        ],
        id,
    );
    for r in results {
        assert_eq!(r.unwrap(), id);
    }
}

#[test]
fn a_process_may_hold_several_ranks() {
    let addr = free_addr();
    let id = fake_id(9);
    // World of 5: rank 0 holds 0..2, another process 2..3, another 3..5.
    let results = meet(
        vec![
            (Rendezvous::tcp(&addr, 5, 0), 2),
            (Rendezvous::tcp(&addr, 5, 2), 1),
            (Rendezvous::tcp(&addr, 5, 3), 2),
        ],
        id,
    );
    for r in results {
        assert_eq!(r.unwrap(), id);
    }
}

#[test]
fn two_ranks_meet_through_a_file_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp_path(&dir);
    let id = fake_id(11);
    let results = meet(
        vec![
            (Rendezvous::file(&path, 3, 1), 2),
            (Rendezvous::file(&path, 3, 0), 1),
        ],
        id,
    );
    for r in results {
        assert_eq!(r.unwrap(), id);
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "rank 0 removes the files: {left:?}");
}

#[test]
fn a_stale_file_from_a_crashed_run_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp_path(&dir);
    std::fs::write(&path, "unigpu-rendezvous 1\nworld 2\ntoken 1\nid 00\n").unwrap();
    let id = fake_id(13);
    // Rank 0 first, so the stale file is gone before rank 1 looks.
    let r0 = Rendezvous::file(&path, 2, 0);
    let rank0 = thread::spawn(move || r0.exchange(1, || Ok(id)));
    thread::sleep(Duration::from_millis(200));
    let got = Rendezvous::file(&path, 2, 1)
        .exchange(1, || unreachable!())
        .unwrap();
    assert_eq!(got, id);
    assert_eq!(rank0.join().unwrap().unwrap(), id);
}

/// A rank that never arrives: every side gets a timeout error, naming
/// what it waited for, within the deadline (plus scheduling slack).
fn assert_times_out(r: Rendezvous, expect: &str) {
    let timeout = Duration::from_millis(600);
    let start = Instant::now();
    let e = r
        .with_timeout(timeout)
        .exchange(1, || Ok(fake_id(1)))
        .unwrap_err();
    let took = start.elapsed();
    match &e {
        Error::Timeout { what, after } => {
            assert_eq!(*after, timeout);
            assert!(what.contains(expect), "{what}");
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(took >= timeout, "gave up early: {took:?}");
    assert!(took < timeout + Duration::from_secs(3), "took {took:?}");
}

#[test]
fn rank_0_alone_on_tcp_times_out_naming_the_missing_rank() {
    assert_times_out(
        Rendezvous::tcp(free_addr(), 3, 0),
        "waited for ranks 1, 2 of 3",
    );
}

#[test]
fn a_rank_without_rank_0_on_tcp_times_out() {
    assert_times_out(Rendezvous::tcp(free_addr(), 2, 1), "could not reach rank 0");
}

#[test]
fn rank_0_alone_with_a_file_times_out_naming_the_missing_rank() {
    let dir = tempfile::tempdir().unwrap();
    assert_times_out(
        Rendezvous::file(tmp_path(&dir), 2, 0),
        "waited for ranks 1 of 2",
    );
    assert!(!tmp_path(&dir).exists(), "rank 0 removes its file");
}

#[test]
fn a_rank_without_rank_0_file_times_out() {
    let dir = tempfile::tempdir().unwrap();
    assert_times_out(Rendezvous::file(tmp_path(&dir), 2, 1), "never appeared");
}

#[test]
fn ranks_that_disagree_on_the_world_size_are_told_why() {
    let addr = free_addr();
    let results = meet(
        vec![
            (
                Rendezvous::tcp(&addr, 2, 0).with_timeout(Duration::from_secs(20)),
                1,
            ),
            (
                Rendezvous::tcp(&addr, 3, 1).with_timeout(Duration::from_secs(20)),
                1,
            ),
        ],
        fake_id(3),
    );
    for r in results {
        match r.unwrap_err() {
            Error::Rendezvous { message } => assert!(message.contains("world of 3"), "{message}"),
            other => panic!("expected a rendezvous error, got {other}"),
        }
    }
}

/// Ranks 1..3 and rank 2 both claimed: whichever process rank 0 admits
/// second is refused ("arrived twice", or the rendezvous already formed
/// without it, and it times out); nobody gets a wrong id.
#[test]
fn a_rank_claimed_twice_never_forms_a_wrong_world() {
    let addr = free_addr();
    let id = fake_id(5);
    let t = Duration::from_secs(2);
    let results = meet(
        vec![
            (Rendezvous::tcp(&addr, 3, 0).with_timeout(t), 1),
            (Rendezvous::tcp(&addr, 3, 1).with_timeout(t), 2),
            (Rendezvous::tcp(&addr, 3, 2).with_timeout(t), 1),
        ],
        id,
    );
    assert!(results.iter().any(|r| r.is_err()), "{results:?}");
    for r in &results {
        match r {
            Ok(got) => assert_eq!(*got, id),
            Err(Error::Rendezvous { message }) => {
                assert!(message.contains("arrived twice"), "{message}")
            }
            Err(Error::Timeout { .. }) => {}
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
}

#[test]
fn the_environment_names_the_meeting() {
    // In a child process: the variables are the process's own.
    const CHILD: &str = "UNIGPU_TEST_RENDEZVOUS_ENV_CHILD";
    if std::env::var(CHILD).is_ok() {
        let r = Rendezvous::from_env().unwrap();
        assert_eq!(r.meeting(), &unigpu::Meeting::Tcp("127.0.0.1:29511".into()));
        assert_eq!((r.world_size(), r.rank()), (4, 3));
        assert_eq!(r.timeout(), Duration::from_secs(7));
        println!("rendezvous-env-checked");
        return;
    }
    let run = unigpu_test_support::child::ChildRun::of(
        unigpu_test_support::child::test_command("the_environment_names_the_meeting")
            .env(CHILD, "1")
            .env_remove("UNIGPU_RENDEZVOUS")
            .env_remove("UNIGPU_WORLD_SIZE")
            .env_remove("UNIGPU_RANK")
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", "29511")
            .env("WORLD_SIZE", "4")
            .env("RANK", "3")
            .env("UNIGPU_COMM_TIMEOUT_SECS", "7"),
    );
    run.assert_ran(&["rendezvous-env-checked"]);
}

/// Two processes (this test binary again), rank 0 and rank 1, meet over
/// loopback TCP and through a temporary file.
#[test]
fn two_processes_meet_over_tcp_and_through_a_file() {
    const ROLE: &str = "UNIGPU_TEST_RENDEZVOUS_ROLE";
    if let Ok(role) = std::env::var(ROLE) {
        let r = Rendezvous::from_env().unwrap();
        let id = r.exchange(1, || Ok(fake_id(42))).unwrap();
        assert_eq!(id, fake_id(42));
        println!("rank {role} got the id");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = format!("file://{}", tmp_path(&dir).display());
    for meeting in [format!("tcp://{}", free_addr()), file] {
        let children: Vec<_> = (0..2)
            .map(|rank| {
                unigpu_test_support::child::test_command(
                    "two_processes_meet_over_tcp_and_through_a_file",
                )
                .env(ROLE, rank.to_string())
                .env("UNIGPU_RENDEZVOUS", &meeting)
                .env("UNIGPU_WORLD_SIZE", "2")
                .env("UNIGPU_RANK", rank.to_string())
                .env("UNIGPU_COMM_TIMEOUT_SECS", "30")
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
            })
            .collect();
        for (rank, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains(&format!("rank {rank} got the id")),
                "rank {rank} over {meeting} failed:\n{stdout}"
            );
        }
    }
}
