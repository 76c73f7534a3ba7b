//! JSON read as strictly as leasehold writes it. Two things serde's defaults
//! accept that no file leasehold writes holds, and that would otherwise be
//! read silently: an object with a key twice (`serde_json::Value` keeps the
//! last), and a struct given as an array or an enum tag given as a number
//! (serde's derive reads those by position).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Parse `text` as one JSON value, refusing an object that holds a key twice
/// (`duplicate field "variant" at line 3 column 40`).
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Strict>(text).map(|s| s.0)
}

/// Whether `e`, from [`parse`], is a key given twice in JSON that is
/// otherwise well formed (not a syntax error or a truncated file): the
/// strict visitor raises no other data error.
pub fn is_duplicate(e: &serde_json::Error) -> bool {
    e.classify() == serde_json::error::Category::Data
}

/// [`parse`] with the error as one message: a key given twice says so
/// (`duplicate field "variant"`, its position left to the caller, who knows
/// the line), and anything else is what `not_json` makes of the error (the
/// reader names what it expected).
pub fn parse_or(
    text: &str,
    not_json: impl FnOnce(&serde_json::Error) -> String,
) -> Result<Value, String> {
    parse(text).map_err(|e| {
        if is_duplicate(&e) {
            strip_position(&e)
        } else {
            not_json(&e)
        }
    })
}

/// A `Value` whose objects have no key twice.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text holds no NaN or infinity; serde_json never hands one.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate field {key:?}"
                )));
            }
            let Strict(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Where a file's JSON does not have the shape of what it was read into.
#[derive(Debug, PartialEq, Eq)]
pub struct ShapeError {
    /// The field (`plan[0].action.action`); empty for the whole file.
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Check `input`, the JSON a file held, against `typed`, what it was read
/// into: where `typed` writes an object `input` must hold one (not an array
/// read by position), and where it writes a string (an enum's tag) `input`
/// must hold one (not a variant's index). Errors name the field
/// (`plan[0].action.action: expected a string, found a number`).
pub fn check_shape<T: Serialize>(input: &Value, typed: &T) -> Result<(), ShapeError> {
    let canonical = serde_json::to_value(typed).expect("what was read serialises");
    compare(input, &canonical, Strictness::Shape, &mut String::new())
}

/// Check `input`, the JSON a file held, against `canonical`, the JSON that
/// what it was read into writes: they must be the same, but for key order.
/// For lines leasehold writes and reads back whole (trace records), where
/// serde's defaults would read an unknown key, a missing optional field, a
/// tag given as a number or a struct given as an array without a word.
/// Errors name the field (`op.index: missing`).
pub fn check_exact(input: &Value, canonical: &Value) -> Result<(), ShapeError> {
    compare(input, canonical, Strictness::Exact, &mut String::new())
}

/// How closely `compare` holds the input to what leasehold writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Strictness {
    /// Objects where objects are written, strings where strings are; keys
    /// the typed value does not write (an absent option given as null) and
    /// other values are left to the typed read.
    Shape,
    /// The same JSON but for key order.
    Exact,
}

/// The walk both checks share: `input` beside `canonical`, field by field,
/// `path` naming where it is (`plan[0].action`).
fn compare(
    input: &Value,
    canonical: &Value,
    strictness: Strictness,
    path: &mut String,
) -> Result<(), ShapeError> {
    let exact = strictness == Strictness::Exact;
    let at = |path: &str, key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    let error = |path: String, message: String| Err(ShapeError { path, message });
    match (input, canonical) {
        (Value::Object(input), Value::Object(canonical)) => {
            if exact {
                if let Some(key) = input.keys().find(|k| !canonical.contains_key(*k)) {
                    return error(at(path, key), "not a field leasehold writes here".into());
                }
                if let Some(key) = canonical.keys().find(|k| !input.contains_key(*k)) {
                    let shown = &canonical[key];
                    return error(at(path, key), format!("missing (leasehold writes {shown})"));
                }
            }
            for (key, value) in input {
                if let Some(c) = canonical.get(key) {
                    let len = path.len();
                    *path = at(path, key);
                    compare(value, c, strictness, path)?;
                    path.truncate(len);
                }
            }
            Ok(())
        }
        (Value::Array(items), Value::Array(written)) if !exact || items.len() == written.len() => {
            for (i, (value, c)) in items.iter().zip(written).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                compare(value, c, strictness, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ if kind(input) != kind(canonical)
            && (exact || matches!(canonical, Value::Object(_) | Value::String(_))) =>
        {
            error(
                path.clone(),
                format!("expected {}, found {}", kind(canonical), kind(input)),
            )
        }
        _ if !exact || input == canonical => Ok(()),
        _ => error(
            path.clone(),
            format!("{input} reads as {canonical}, which is what leasehold writes"),
        ),
    }
}

/// What `value` is, for a message: "an array".
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A serde_json error's message without its " at line L column C", on
/// one line.
pub fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    one_line(text.strip_suffix(&suffix).unwrap_or(&text))
}

/// `text` on one line: a control character it quotes from the input (a key
/// or a string holding a newline) is shown escaped, as JSON writes it, so
/// a message about bad input stays the one line the contract promises.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Deserialize `value` as a `T` with an error that names the field it is
/// about (`plan[2].node: invalid type: ...`), by `serde_path_to_error`.
/// An internally tagged enum is read whole, so the path stops at it; the
/// field inside is then the one whose value the message quotes.
pub fn from_value_named<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    let e = match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let message = e.inner().to_string();
    let mut name = e.path().to_string();
    if name == "." {
        name.clear();
    }
    let mut at = value;
    for segment in e.path().iter() {
        at = match segment {
            serde_path_to_error::Segment::Seq { index } => &at[*index],
            serde_path_to_error::Segment::Map { key } => &at[key.as_str()],
            _ => break,
        };
    }
    // Inside an internally tagged enum (or a flattened struct) serde reads
    // from a buffer and the path ends there: the one field whose value the
    // message quotes, at any depth below, is the one it is about.
    let mut quoted = Vec::new();
    quoting(&message, at, &mut String::new(), &mut quoted);
    if let [key] = &quoted[..] {
        if !name.is_empty() && !key.starts_with('[') {
            name.push('.');
        }
        name.push_str(key);
    }
    Err(one_line(&if name.is_empty() {
        message
    } else {
        format!("{name}: {message}")
    }))
}

/// The paths below `value` (objects' fields and arrays' items), at every
/// depth, whose value `message` quotes. The caller names a field only when
/// exactly one does: two fields holding the quoted value (an `incarnation`
/// of 1 beside a `lease_lost` of 1) could be either, and a wrong name
/// misleads more than none.
fn quoting(message: &str, value: &Value, path: &mut String, found: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(object) => object.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("[{i}]"), v))
            .collect(),
        _ => return,
    };
    let join = |path: &str, key: &str| {
        if path.is_empty() || key.starts_with('[') {
            format!("{path}{key}")
        } else {
            format!("{path}.{key}")
        }
    };
    for (key, child) in children {
        if mentions(message, child) {
            found.push(join(path, &key));
        }
        let len = path.len();
        *path = join(path, &key);
        quoting(message, child, path, found);
        path.truncate(len);
    }
}

/// Whether a serde error message shows `value` as what it did not expect.
fn mentions(message: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => {
            message.contains(&format!("string {s:?}"))
                || message.contains(&format!("variant `{s}`"))
        }
        Value::Number(n) => {
            message.contains(&format!("integer `{n}`"))
                || message.contains(&format!("floating point `{n}`"))
        }
        Value::Bool(b) => message.contains(&format!("boolean `{b}`")),
        Value::Null => message.contains("invalid type: null") || message.contains("unit"),
        Value::Object(_) => message.contains("invalid type: map"),
        Value::Array(_) => message.contains("invalid type: sequence"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_key_twice_at_any_depth() {
        let err = parse("{\"a\": {\"b\": 1,\n \"b\": 2}}").unwrap_err();
        assert_eq!(err.line(), 2);
        assert!(err.to_string().contains("duplicate field \"b\""), "{err}");
        assert_eq!(
            parse("{\"a\": [1, {\"b\": null}]}").unwrap(),
            serde_json::json!({"a": [1, {"b": null}]})
        );
    }

    #[test]
    fn names_an_array_or_a_number_read_by_position() {
        #[derive(Serialize)]
        struct Inner {
            x: u32,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "snake_case")]
        enum Tag {
            Drop,
        }
        #[derive(Serialize)]
        struct Outer {
            inner: Inner,
            tags: Vec<Tag>,
        }
        let typed = Outer {
            inner: Inner { x: 1 },
            tags: vec![Tag::Drop],
        };
        let check = |v: Value| check_shape(&v, &typed).map_err(|e| e.to_string());
        assert_eq!(
            check(serde_json::json!({"inner": {"x": 1}, "tags": ["drop"]})),
            Ok(())
        );
        assert_eq!(
            check(serde_json::json!({"inner": [1], "tags": ["drop"]})),
            Err("inner: expected an object, found an array".into())
        );
        assert_eq!(
            check(serde_json::json!({"inner": {"x": 1}, "tags": [0]})),
            Err("tags[0]: expected a string, found a number".into())
        );
        assert_eq!(
            check(serde_json::json!([[1], ["drop"]])),
            Err("expected an object, found an array".into())
        );
    }
}
