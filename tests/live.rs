//! `leasehold live` over SQLite (and over PostgreSQL when
//! `LEASEHOLD_POSTGRES_URL` is set, as `.ci/run` sets it): the real fleet,
//! with faults on, judged by the same checkers; its trace read back; bad
//! input and Ctrl-C. Small and fast: a friday-rush cut down to six workers
//! and sixty tasks, at 20x.

use leasehold::live::{LiveOptions, LiveStore, live, open_stores};
use leasehold::run::RecordedRun;
use leasehold::trace::{LiveHeader, TraceEnd, TraceFile, TraceHeader, TraceWriter};
use leasehold::{Scenario, ValidScenario};
use leasehold_check::Invariant;
use leasehold_interface::{StoreReply, StoreRequest};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, Variant};
use leasehold_sim::Observer;
use leasehold_store_sql::{Setup, StoreUrl};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

const SPEED: u64 = 20;

/// One live fleet at a time: each is a few dozen threads on the real
/// clock, and two at once on a small machine would starve each other.
static ONE_FLEET: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_fleet() -> std::sync::MutexGuard<'static, ()> {
    ONE_FLEET.lock().unwrap_or_else(|e| e.into_inner())
}

/// friday-rush cut down: 6 workers, 2 reclaimers, 60 tasks in 20 s, every
/// kind of fault on (no swarm) for the first 30 s.
fn small_rush() -> ValidScenario {
    rush_of(6, 20_000)
}

/// The cut-down rush with `workers` workers and its sixty tasks arriving
/// within `window_ms`.
fn rush_of(workers: u32, window_ms: u64) -> ValidScenario {
    let text = std::fs::read_to_string("scenarios/friday-rush.json").unwrap();
    let mut s: serde_json::Value = serde_json::from_str(&text).unwrap();
    s["name"] = "small-rush".into();
    s["fleet"]["workers"] = workers.into();
    s["tasks"]["count"] = 60.into();
    s["tasks"]["arrival_window_ms"] = window_ms.into();
    s["faults"]["fault_phase_ms"] = 30_000.into();
    s["faults"]["swarm"] = false.into();
    // Denser faults than the rush's, so a short run meets every kind.
    s["faults"]["crash"]["per_step"] = serde_json::json!([0.01, 0.01]);
    s["faults"]["store"]["outages_per_minute"] = serde_json::json!([4, 4]);
    s["faults"]["store"]["ambiguous"] = serde_json::json!([0.05, 0.05]);
    s["faults"]["restarts"]["rolling_deploy_at_ms"] = serde_json::json!([5_000, 10_000]);
    s["faults"]["restarts"]["mass_failure_at_ms"] = serde_json::json!([5_000, 20_000]);
    Scenario::parse(&serde_json::to_string(&s).unwrap()).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn postgres() -> Option<StoreUrl> {
    let url = std::env::var("LEASEHOLD_POSTGRES_URL").ok()?;
    Some(StoreUrl::parse(&url).expect("LEASEHOLD_POSTGRES_URL"))
}

/// A live run of `scn` with its trace written to `trace`.
fn live_run(
    scn: &ValidScenario,
    store: &StoreUrl,
    seed: u64,
    variant: Variant,
    trace: &Path,
) -> (leasehold::RunOutcome, leasehold::live::LiveReport) {
    let file = std::fs::File::create(trace).unwrap();
    let mut header = TraceHeader::new(&scn.source, seed, variant.name());
    header.live = Some(LiveHeader {
        store: store.shown(),
        speed: SPEED,
        note: "a test".into(),
    });
    let mut writer = TraceWriter::new(std::io::BufWriter::new(file), &header).unwrap();
    let _one = one_fleet();
    let opts = LiveOptions {
        store: store.clone(),
        seed,
        variant,
        speed: SPEED,
        reset: true,
    };
    let (outcome, report) = live(
        scn,
        &opts,
        Some(&mut writer as &mut dyn Observer<DocKey, DocValue, LeaseEvent>),
        &AtomicBool::new(false),
    )
    .expect("the store opens");
    let mut end = TraceEnd::of(&outcome);
    end.end_us = Some(outcome.sim_time_us());
    writer.finish(end).unwrap();
    (outcome, report)
}

/// The trace's records, judged again, give the run's verdict and hash.
fn judged_again(scn: &ValidScenario, trace: &Path, outcome: &leasehold::RunOutcome) {
    let text = std::fs::read_to_string(trace).unwrap();
    let file = TraceFile::parse(&text).unwrap();
    assert!(file.header.live.is_some());
    let recorded: RecordedRun = file.recorded();
    let again = leasehold::run::judge_recorded(
        scn,
        outcome.seed,
        outcome.variant,
        &recorded,
        leasehold::run::RecordHost::Live,
        None,
    )
    .unwrap();
    assert_eq!(again.invariants, outcome.invariants);
    assert_eq!(again.trace_hash_hex(), outcome.trace_hash_hex());
    assert_eq!(again.events(), outcome.events());
}

/// The correct protocol, every kind of fault on, over a real store: every
/// task done, no invariant violated, and the faults did strike.
fn correct_passes(store: StoreUrl, dir: &Path) {
    let scn = small_rush();
    let trace = dir.join("correct.jsonl");
    let (outcome, report) = live_run(&scn, &store, 1, Variant::Correct, &trace);
    assert!(
        outcome.ok(),
        "{}: {:?} {:?}",
        store.shown(),
        outcome.violations,
        outcome.cut_short
    );
    assert_eq!(outcome.tasks_done, 60);
    assert!(report.store_requests > 500, "{report:?}");
    for kind in ["crash", "restart", "store_outage", "store_reply_lost"] {
        assert!(
            outcome.fault_kinds.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} fault struck: {:?}",
            outcome.fault_kinds
        );
    }
    judged_again(&scn, &trace, &outcome);
}

#[test]
fn the_correct_protocol_passes_live_over_sqlite_with_faults() {
    let dir = temp_dir("correct");
    correct_passes(StoreUrl::Sqlite(dir.join("store.db")), &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_correct_protocol_passes_live_over_postgres_with_faults() {
    let Some(url) = postgres() else {
        eprintln!("LEASEHOLD_POSTGRES_URL is not set: .ci/run runs this over PostgreSQL");
        return;
    };
    let dir = temp_dir("correct-pg");
    correct_passes(url, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A planted bug fails live: a claim by blind write lets two workers own
/// one task, which the checker sees in the real store's records. Twelve
/// workers and the sixty tasks in one second: every poll races others for
/// the same pending tasks, so blind claims meet in every run.
#[test]
fn a_blind_claim_fails_live() {
    let dir = temp_dir("blind");
    let scn = rush_of(12, 1_000);
    let store = StoreUrl::Sqlite(dir.join("store.db"));
    let trace = dir.join("blind.jsonl");
    let (outcome, _) = live_run(&scn, &store, 1, Variant::UnconditionalClaim, &trace);
    assert!(
        outcome.invariants.contains(&Invariant::NoDoubleOwnership),
        "{:?}",
        outcome.invariants
    );
    judged_again(&scn, &trace, &outcome);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store holding documents is refused unless reset; the refusal names
/// the store and says how to go on.
#[test]
fn a_store_holding_documents_is_refused_unless_reset() {
    let dir = temp_dir("refuse");
    let url = StoreUrl::Sqlite(dir.join("store.db"));
    let mut stores = open_stores(&url, false, 1).unwrap();
    let put = StoreRequest::CreateIfAbsent {
        key: DocKey::Task {
            task: leasehold_protocol::TaskId(1),
        },
        value: DocValue::Task(leasehold_protocol::TaskDoc::new_pending(1)),
        index: None,
    };
    stores[0].apply(&put, None).unwrap();
    drop(stores);
    let e = open_stores(&url, false, 1).err().unwrap();
    assert!(
        e.contains("not empty") && e.contains("--reset") && e.contains("store.db"),
        "{e}"
    );
    assert!(open_stores(&url, true, 1).is_ok());
    assert!(open_stores(&url, false, 1).is_ok(), "empty after the reset");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C stops the fleet: the verdict so far (liveness left out, the run
/// reported cut short), and a store whose every document reads back.
#[test]
fn an_interrupted_run_stops_with_its_verdict_so_far() {
    let dir = temp_dir("interrupt");
    let scn = small_rush();
    let store = StoreUrl::Sqlite(dir.join("store.db"));
    let interrupt = AtomicBool::new(false);
    let opts = LiveOptions {
        store: store.clone(),
        seed: 2,
        variant: Variant::Correct,
        speed: SPEED,
        reset: false,
    };
    let _one = one_fleet();
    let (outcome, report) = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(600));
            interrupt.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        live(&scn, &opts, None, &interrupt).unwrap()
    });
    assert!(report.interrupted);
    let cut = outcome.cut_short.as_ref().expect("cut short");
    assert!(cut.limit.contains("interrupted"), "{cut:?}");
    assert!(outcome.tasks_done < 60);
    // Every document the fleet left reads back whole.
    let mut s =
        LiveStore::open(&store, Setup::Existing, leasehold::live::codec::LeaseCodec).unwrap();
    let scan = StoreRequest::Scan {
        start: DocKey::Member {
            owner: leasehold_protocol::Owner::MIN,
        },
        end: DocKey::TaskLease {
            task: leasehold_protocol::TaskId::END,
        },
        limit: 10_000,
    };
    match s.apply(&scan, None).unwrap().reply {
        StoreReply::Scanned { docs, more } => {
            assert!(!more);
            assert!(docs.iter().any(|d| matches!(d.key, DocKey::Task { .. })));
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn leasehold(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Bad input: one line naming the flag (and the store without its
/// password), exit 2, before anything runs.
#[test]
fn bad_live_input_is_one_line_naming_the_flag() {
    let dir = temp_dir("bad");
    let db = format!("sqlite:{}", dir.join("x.db").display());
    let scenario = "scenarios/friday-rush.json";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["live", scenario, "--store", "mysql://u:secret@h/db"],
            "--store",
        ),
        (
            vec!["live", scenario, "--store", &db, "--speed", "0"],
            "--speed",
        ),
        (
            vec!["live", scenario, "--store", &db, "--speed", "5000"],
            "--speed",
        ),
        (
            vec!["live", scenario, "--store", &db, "--variant", "nope"],
            "--variant",
        ),
        (
            vec![
                "live",
                scenario,
                "--store",
                "postgres://u:secret@127.0.0.1:1/db",
            ],
            "cannot reach",
        ),
        (
            vec!["live", scenario, "--store", "sqlite:/nonexistent-dir/x.db"],
            "--store",
        ),
    ];
    for (args, names) in cases {
        let (code, out, err) = leasehold(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        assert!(!err.contains("secret"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// PostgreSQL refusing the run: a wrong password, or a user that may not
/// create the store's tables (scripts/local-postgres.sh makes
/// `leasehold_guest` for this). One line, exit 2, naming the database
/// without the password.
#[test]
fn a_refusing_postgres_is_one_line_naming_it_without_the_password() {
    let Ok(url) = std::env::var("LEASEHOLD_POSTGRES_URL") else {
        eprintln!("LEASEHOLD_POSTGRES_URL is not set: .ci/run runs this over PostgreSQL");
        return;
    };
    let Some((_, host)) = url.split_once('@') else {
        panic!("LEASEHOLD_POSTGRES_URL has no user: {url}");
    };
    let wrong_password = format!("postgres://leasehold:not-the-password@{host}");
    let guest = format!("postgres://leasehold_guest:guest@{host}");
    let scenario = "scenarios/friday-rush.json";
    for (store, says) in [
        (wrong_password.as_str(), "password"),
        (guest.as_str(), "permission denied"),
    ] {
        let (code, out, err) = leasehold(&["live", scenario, "--store", store]);
        assert_eq!(code, 2, "{store}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(
            !err.contains("not-the-password") && !err.contains(":guest@"),
            "{err}"
        );
        assert!(err.contains(host.split('/').next().unwrap()), "{err}");
    }
}
