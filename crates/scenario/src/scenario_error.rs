//! What every scenario and fault-model field check returns: the error that
//! names the field, and the time-field limit both sections are held to.

/// The largest value of any time field (`..._ms`, a single value or either
/// end of a range): 10^9 ms, about 11.6 days of simulated time. No real
/// scenario comes near it, and it keeps every microsecond conversion and
/// every sum of several such fields used downstream (deadlines, the lease and
/// effect-timeout rules, the no-lost-task bound's terms) below 10^14 µs, far
/// from `u64::MAX` (about 1.8 x 10^19).
pub const MAX_DURATION_MS: u64 = 1_000_000_000;

/// A scenario problem, naming the field (`fleet.workers`) or the JSON line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A file that cannot be read has no field to name: its path is
        // already in front of the message.
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

pub(crate) fn bad<T>(
    field: impl Into<String>,
    message: impl Into<String>,
) -> Result<T, ScenarioError> {
    Err(ScenarioError {
        field: field.into(),
        message: message.into(),
    })
}

/// `value` of time field `field`, checked against [`MAX_DURATION_MS`].
pub fn check_duration(field: &str, value: u64) -> Result<(), ScenarioError> {
    if value > MAX_DURATION_MS {
        return bad(
            field,
            format!("{value} is above the limit of {MAX_DURATION_MS} ms (about 11.6 days)"),
        );
    }
    Ok(())
}
