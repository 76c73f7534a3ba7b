//! The model checked against reality: random request sequences from several
//! clients, each client on its own connection, applied to the simulator's
//! `VersionedStore` and to each real backend, with equal replies required.
//!
//! Two ways of interleaving:
//! - in turn: one interleaved order, every request applied to the model and
//!   then to the real store; every reply and every document before a write
//!   must be equal, with versions read through [`Versions`];
//! - at once: each client's requests sent from its own thread, all clients
//!   together; the replies put in the order the store's revisions say
//!   (writes by revision, each other reply after the write it observed)
//!   must be what the model answers to that order: the real store is
//!   linearizable, and its revisions name the order. `leasehold live`
//!   records a live run in that order.
//!
//! SQLite runs in every `cargo test`; PostgreSQL when
//! `LEASEHOLD_POSTGRES_URL` is set. `LEASEHOLD_DIFFERENTIAL_CASES` sets the
//! number of generated sequences per backend and way (default 48).

use leasehold_interface::{Document, StoreReply, StoreRequest, Version};
use leasehold_sim::VersionedStore;
use leasehold_store_sql::{Applied, Codec, Setup, SqlStore, StoreUrl};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;

type Key = u32;
type Value = u32;
type Request = StoreRequest<Key, Value>;
type Reply = StoreReply<Key, Value>;
type Store = SqlStore<Key, Value, U32Codec>;

/// Documents' keys: few, so that requests meet on them.
const KEYS: u32 = 12;
/// Index keys: `INDEX_BASE + key * 4 + which`, so each names at most one
/// document (the model's unique index holds callers to that, as the
/// protocol's index keys embed their task).
const INDEX_BASE: u32 = 1_000;
const MAX_CLIENTS: usize = 4;
const MAX_REQUESTS: usize = 48;

struct U32Codec;

impl Codec<u32, u32> for U32Codec {
    fn key_bytes(&self, key: &u32) -> Vec<u8> {
        key.to_be_bytes().to_vec()
    }
    fn key_from(&self, bytes: &[u8]) -> Result<u32, String> {
        Ok(u32::from_be_bytes(
            bytes.try_into().map_err(|_| "not four bytes")?,
        ))
    }
    fn value_text(&self, value: &u32) -> String {
        value.to_string()
    }
    fn value_from(&self, text: &str) -> Result<u32, String> {
        text.parse().map_err(|e| format!("{e}"))
    }
}

fn cases() -> u32 {
    std::env::var("LEASEHOLD_DIFFERENTIAL_CASES")
        .ok()
        .map(|n| n.parse().expect("LEASEHOLD_DIFFERENTIAL_CASES: a number"))
        .unwrap_or(48)
}

/// A request before its expected version is known: conditional requests
/// name the version they expect as the client's latest sight of the
/// document (`Seen`), or a version picked out of the air.
#[derive(Clone, Debug)]
enum Planned {
    Get(Key),
    Create(Key, Value, Option<u32>),
    Put(Key, Expect, Value, Option<u32>),
    PutUnconditional(Key, Value, Option<u32>),
    Delete(Key, Expect),
    Scan(Key, Key, u32),
    ScanIndex(u32, u32, u32),
}

#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The version this client last saw the document at (0 if never).
    Seen,
    /// A version out of the air (most likely stale or not yet written).
    Any(Version),
}

fn key() -> impl Strategy<Value = Key> {
    0..KEYS
}

fn index() -> impl Strategy<Value = Option<u32>> {
    prop_oneof![Just(None), (0..4u32).prop_map(Some)]
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![4 => Just(Expect::Seen), 1 => (0..40u64).prop_map(Expect::Any)]
}

fn planned() -> impl Strategy<Value = Planned> {
    let bound = || 0..KEYS + 2;
    let index_bound = || INDEX_BASE..INDEX_BASE + KEYS * 4 + 2;
    prop_oneof![
        2 => key().prop_map(Planned::Get),
        4 => (key(), any::<u32>(), index()).prop_map(|(k, v, i)| Planned::Create(k, v, i)),
        6 => (key(), expect(), any::<u32>(), index()).prop_map(|(k, e, v, i)| Planned::Put(k, e, v, i)),
        1 => (key(), any::<u32>(), index()).prop_map(|(k, v, i)| Planned::PutUnconditional(k, v, i)),
        3 => (key(), expect()).prop_map(|(k, e)| Planned::Delete(k, e)),
        2 => (bound(), bound(), 1..6u32).prop_map(|(a, b, l)| Planned::Scan(a, b, l)),
        2 => (index_bound(), index_bound(), 1..6u32).prop_map(|(a, b, l)| Planned::ScanIndex(a, b, l)),
    ]
}

/// Several clients' requests, interleaved: (client, request) in order.
fn sequence() -> impl Strategy<Value = Vec<(usize, Planned)>> {
    (1..=MAX_CLIENTS).prop_flat_map(|clients| {
        proptest::collection::vec((0..clients, planned()), 1..MAX_REQUESTS)
    })
}

/// What each client last saw of each document: the version its `Seen`
/// conditional requests expect.
#[derive(Default)]
struct Sight(BTreeMap<Key, Version>);

impl Sight {
    fn request(&self, planned: &Planned) -> Request {
        let expected = |key: &Key, e: Expect| match e {
            Expect::Seen => self.0.get(key).copied().unwrap_or(0),
            Expect::Any(v) => v,
        };
        let index = |key: Key, which: Option<u32>| which.map(|w| INDEX_BASE + key * 4 + w);
        match *planned {
            Planned::Get(key) => StoreRequest::Get { key },
            Planned::Create(key, value, i) => StoreRequest::CreateIfAbsent {
                key,
                value,
                index: index(key, i),
            },
            Planned::Put(key, e, value, i) => StoreRequest::PutIfVersion {
                key,
                expected: expected(&key, e),
                value,
                index: index(key, i),
            },
            Planned::PutUnconditional(key, value, i) => StoreRequest::PutUnconditional {
                key,
                value,
                index: index(key, i),
            },
            Planned::Delete(key, e) => StoreRequest::DeleteIfVersion {
                key,
                expected: expected(&key, e),
            },
            Planned::Scan(start, end, limit) => StoreRequest::Scan { start, end, limit },
            Planned::ScanIndex(start, end, limit) => StoreRequest::ScanIndex { start, end, limit },
        }
    }

    /// Learn from a reply to `request` (versions as this client sees them).
    fn learn(&mut self, request: &Request, reply: &Reply) {
        let mut saw = |doc: &Document<Key, Value>| {
            self.0.insert(doc.key, doc.version);
        };
        match reply {
            StoreReply::Written { version } => {
                self.0.insert(*request.key().expect("a write"), *version);
            }
            StoreReply::Deleted => {
                self.0.remove(request.key().expect("a delete"));
            }
            StoreReply::Got { doc: Some(doc) } | StoreReply::Conflict { current: Some(doc) } => {
                saw(doc)
            }
            StoreReply::Scanned { docs, .. } => docs.iter().for_each(saw),
            StoreReply::Got { doc: None } | StoreReply::Conflict { current: None } => {
                if let Some(key) = request.key() {
                    self.0.remove(key);
                }
            }
            StoreReply::Unavailable => {}
        }
    }
}

/// The explicit mapping between the model's versions and a real store's:
/// each version a write was given in the model pairs with the version the
/// real store gave the same write; the pairing must be one to one and keep
/// the order (a later write, a later version in both). Both backends give
/// the model's very numbers (a global revision, one up per write or delete)
/// so the mapping is the identity today; the test asks only for what the
/// protocol relies on.
#[derive(Default)]
struct Versions {
    model_to_real: BTreeMap<Version, Version>,
    real_to_model: BTreeMap<Version, Version>,
}

impl Versions {
    fn pair(&mut self, model: Version, real: Version) -> Result<(), String> {
        match (
            self.model_to_real.get(&model),
            self.real_to_model.get(&real),
        ) {
            (Some(&r), _) if r != real => {
                return Err(format!("model version {model} is real {r} and {real}"));
            }
            (_, Some(&m)) if m != model => {
                return Err(format!("real version {real} is model {m} and {model}"));
            }
            _ => {}
        }
        let below = self.model_to_real.range(..model).next_back();
        let above = self.model_to_real.range(model + 1..).next();
        if below.is_some_and(|(_, &r)| r >= real) || above.is_some_and(|(_, &r)| r <= real) {
            return Err(format!("model {model} -> real {real} breaks the order"));
        }
        self.model_to_real.insert(model, real);
        self.real_to_model.insert(real, model);
        Ok(())
    }

    /// A real request for the model's `request` (a conditional request's
    /// expected version mapped; one never written stays as it is, missing
    /// in both).
    fn real_request(&self, request: &Request) -> Request {
        let map = |v: &Version| self.model_to_real.get(v).copied().unwrap_or(*v);
        let mut real = request.clone();
        match &mut real {
            StoreRequest::PutIfVersion { expected, .. }
            | StoreRequest::DeleteIfVersion { expected, .. } => *expected = map(expected),
            _ => {}
        }
        real
    }

    fn doc(&self, doc: &Document<Key, Value>) -> Result<Document<Key, Value>, String> {
        let version = *self
            .real_to_model
            .get(&doc.version)
            .ok_or_else(|| format!("real version {} was never written", doc.version))?;
        Ok(Document {
            version,
            ..doc.clone()
        })
    }

    /// The real reply in the model's versions; a write's new version paired
    /// with the model's first.
    fn reply(&mut self, model: &Reply, real: &Reply) -> Result<Reply, String> {
        if let (StoreReply::Written { version: m }, StoreReply::Written { version: r }) =
            (model, real)
        {
            self.pair(*m, *r)?;
        }
        Ok(match real {
            StoreReply::Got { doc } => StoreReply::Got {
                doc: doc.as_ref().map(|d| self.doc(d)).transpose()?,
            },
            StoreReply::Written { version } => StoreReply::Written {
                version: self.real_to_model[version],
            },
            StoreReply::Deleted => StoreReply::Deleted,
            StoreReply::Conflict { current } => StoreReply::Conflict {
                current: current.as_ref().map(|d| self.doc(d)).transpose()?,
            },
            StoreReply::Scanned { docs, more } => StoreReply::Scanned {
                docs: docs.iter().map(|d| self.doc(d)).collect::<Result<_, _>>()?,
                more: *more,
            },
            StoreReply::Unavailable => StoreReply::Unavailable,
        })
    }
}

/// A backend's clients: connection 0 also resets the store between cases.
struct Clients {
    stores: Vec<Store>,
}

impl Clients {
    fn open(url: &StoreUrl) -> Clients {
        let mut stores = vec![Store::open(url, Setup::Reset, U32Codec).expect("open the store")];
        for _ in 1..MAX_CLIENTS {
            stores.push(Store::open(url, Setup::Existing, U32Codec).expect("open a client"));
        }
        Clients { stores }
    }

    fn reset(&mut self) {
        self.stores[0].reset().expect("reset the store");
    }
}

fn apply(store: &mut Store, request: &Request) -> Applied<Key, Value> {
    store
        .apply(request, None)
        .unwrap_or_else(|e| panic!("{request:?}: {e}"))
}

/// In turn: one interleaved order, model and real store side by side.
fn in_turn(clients: &mut Clients, sequence: &[(usize, Planned)]) -> Result<(), TestCaseError> {
    clients.reset();
    let mut model: VersionedStore<Key, Value> = VersionedStore::new();
    let mut versions = Versions::default();
    let mut sights: Vec<Sight> = (0..MAX_CLIENTS).map(|_| Sight::default()).collect();
    for (step, (client, planned)) in sequence.iter().enumerate() {
        let request = sights[*client].request(planned);
        let (want, want_before) = model.apply(&request);
        let real_request = versions.real_request(&request);
        let got = apply(&mut clients.stores[*client], &real_request);
        let got_reply = versions
            .reply(&want, &got.reply)
            .map_err(|e| TestCaseError::fail(format!("step {step} {request:?}: {e}")))?;
        prop_assert_eq!(
            &got_reply,
            &want,
            "step {} client {}: {:?}",
            step,
            client,
            request
        );
        let got_before = got
            .before
            .as_ref()
            .map(|d| versions.doc(d))
            .transpose()
            .map_err(TestCaseError::fail)?;
        prop_assert_eq!(
            &got_before,
            &want_before,
            "before, step {}: {:?}",
            step,
            request
        );
        sights[*client].learn(&request, &want);
    }
    // And the end state, document by document.
    let scan = StoreRequest::Scan {
        start: 0,
        end: u32::MAX,
        limit: 10_000,
    };
    let (want, _) = model.apply(&scan);
    let got = apply(&mut clients.stores[0], &scan);
    let got = versions
        .reply(&want, &got.reply)
        .map_err(TestCaseError::fail)?;
    prop_assert_eq!(got, want, "the documents at the end");
    Ok(())
}

/// At once: each client's requests from its own thread, together; the
/// replies in revision order must be the model's answers to that order.
fn at_once(clients: &mut Clients, sequence: &[(usize, Planned)]) -> Result<(), TestCaseError> {
    clients.reset();
    let mut per_client: Vec<Vec<Planned>> = vec![Vec::new(); MAX_CLIENTS];
    for (client, planned) in sequence {
        per_client[*client].push(planned.clone());
    }
    // (client, position in its own sequence, request, reply)
    let mut answered: Vec<(usize, usize, Request, Applied<Key, Value>)> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = clients
                .stores
                .iter_mut()
                .zip(&per_client)
                .enumerate()
                .map(|(client, (store, planned))| {
                    scope.spawn(move || {
                        let mut sight = Sight::default();
                        let mut out = Vec::with_capacity(planned.len());
                        for (at, p) in planned.iter().enumerate() {
                            let request = sight.request(p);
                            let applied = apply(store, &request);
                            sight.learn(&request, &applied.reply);
                            out.push((client, at, request, applied));
                        }
                        out
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a client thread"))
                .collect()
        });
    // Writes by revision; every other reply after the write it saw. Among
    // those, any order (they change nothing): by client and position.
    answered.sort_by_key(|(client, at, _, a)| (a.revision, !a.wrote, *client, *at));
    let mut writes = 0;
    for (_, _, _, a) in &answered {
        if a.wrote {
            writes += 1;
            prop_assert_eq!(a.revision, writes, "revisions are one per write, in order");
        }
    }
    let mut model: VersionedStore<Key, Value> = VersionedStore::new();
    for (client, at, request, got) in &answered {
        let (want, want_before) = model.apply(request);
        prop_assert_eq!(
            &got.reply,
            &want,
            "client {} request {} at revision {}: {:?}",
            client,
            at,
            got.revision,
            request
        );
        prop_assert_eq!(&got.before, &want_before, "before: {:?}", request);
    }
    Ok(())
}

fn differential(url: &StoreUrl) {
    let clients = RefCell::new(Clients::open(url));
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    for (way, check) in [
        (
            "in turn",
            in_turn as fn(&mut Clients, &[(usize, Planned)]) -> _,
        ),
        ("at once", at_once),
    ] {
        let mut runner = TestRunner::new(config.clone());
        let result = runner.run(&sequence(), |seq| check(&mut clients.borrow_mut(), &seq));
        if let Err(e) = result {
            panic!("{} {way}: {e}", url.shown());
        }
        eprintln!(
            "{} {way}: {} generated sequences, replies equal",
            url.shown(),
            config.cases
        );
    }
}

#[test]
fn sqlite_answers_as_the_model() {
    let dir = std::env::temp_dir().join(format!("leasehold-differential-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.db");
    differential(&StoreUrl::Sqlite(path));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn postgres_answers_as_the_model() {
    let Ok(url) = std::env::var("LEASEHOLD_POSTGRES_URL") else {
        eprintln!("LEASEHOLD_POSTGRES_URL is not set: the PostgreSQL store is checked in .ci/run");
        return;
    };
    differential(&StoreUrl::parse(&url).expect("LEASEHOLD_POSTGRES_URL"));
}
