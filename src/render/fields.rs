//! JSON objects written field by field, into a `serde_json` map or straight into bytes.
//!
//! A shape that is both sent alone (an event, a `GET` answer) and listed by the thousand
//! (`/register`'s users and channels) is written once, against [`Fields`]: into a [`Map`] where
//! the caller goes on to edit or embed it, or into a [`JsonBuf`] where the answer is only ever
//! serialized. Writing bytes directly skips building a tree of maps, one allocation per key and
//! value, and dropping it again, which is most of the cost of a large answer.

use serde::Serialize;
use serde_json::{Map, Value};

/// A value written as the JSON string of its `Display` form, with no `String` made for it
/// first (in a [`JsonBuf`], straight into the bytes).
pub struct Shown<T>(pub T);

impl<T: std::fmt::Display> Serialize for Shown<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// Somewhere the fields of one JSON object are written, in order.
pub trait Fields {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T);
}

impl Fields for Map<String, Value> {
    /// A key written twice keeps its first position and takes the later value, as
    /// [`Map::insert`] does.
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        // Serializing plain data into a `Value` cannot fail; `json!` makes the same assumption.
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.insert(key.to_owned(), value);
    }
}

/// JSON text being written.
#[derive(Debug, Default)]
pub struct JsonBuf {
    bytes: Vec<u8>,
    /// A value failed to serialize (only a map with keys JSON cannot have can): the text is
    /// incomplete and [`JsonBuf::into_bytes`] says so.
    failed: bool,
}

impl JsonBuf {
    pub fn with_capacity(capacity: usize) -> Self {
        JsonBuf {
            bytes: Vec::with_capacity(capacity),
            failed: false,
        }
    }

    /// The text, or `None` when a value could not be written.
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        (!self.failed).then_some(self.bytes)
    }

    /// Writes one JSON value.
    pub fn value<T: Serialize + ?Sized>(&mut self, value: &T) {
        if serde_json::to_writer(&mut self.bytes, value).is_err() {
            self.failed = true;
        }
    }

    /// Writes one object, its fields written by `fill`.
    pub fn object(&mut self, fill: impl FnOnce(&mut Obj<'_>)) {
        self.bytes.push(b'{');
        fill(&mut Obj {
            buf: self,
            first: true,
        });
        self.bytes.push(b'}');
    }

    /// Writes an array of values, one per item, each written by `write`.
    pub fn array<I: IntoIterator>(
        &mut self,
        items: I,
        mut write: impl FnMut(&mut JsonBuf, I::Item),
    ) {
        self.bytes.push(b'[');
        for (n, item) in items.into_iter().enumerate() {
            if n > 0 {
                self.bytes.push(b',');
            }
            write(self, item);
        }
        self.bytes.push(b']');
    }

    /// The text written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether a value failed to be written (see [`JsonBuf::into_bytes`]).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Writes an array of objects, one per item, each written by `fill`.
    pub fn objects<I: IntoIterator>(
        &mut self,
        items: I,
        mut fill: impl FnMut(&mut Obj<'_>, I::Item),
    ) {
        self.array(items, |b, item| b.object(|o| fill(o, item)));
    }

    /// Starts a field of an object: the comma before any but the first, the key, the colon.
    fn key(&mut self, first: &mut bool, key: &str) {
        if !std::mem::take(first) {
            self.bytes.push(b',');
        }
        // Keys are names from the code, which need no escaping: written as they are.
        if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.bytes.reserve(key.len() + 3);
            self.bytes.push(b'"');
            self.bytes.extend_from_slice(key.as_bytes());
            self.bytes.extend_from_slice(b"\":");
        } else {
            self.value(key);
            self.bytes.push(b':');
        }
    }

    /// Appends one complete value already written as JSON text (by `serde_json`, once).
    pub fn text(&mut self, json: &[u8]) {
        self.bytes.extend_from_slice(json);
    }

    /// Appends one complete value written in another buffer.
    pub fn append(&mut self, other: JsonBuf) {
        self.bytes.extend_from_slice(&other.bytes);
        self.failed |= other.failed;
    }

    /// The length of the text written so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// The object being written into a [`JsonBuf`].
pub struct Obj<'a> {
    buf: &'a mut JsonBuf,
    first: bool,
}

impl Obj<'_> {
    /// A field whose value is written by `write` (an object, an array of objects).
    pub fn field_with(&mut self, key: &str, write: impl FnOnce(&mut JsonBuf)) {
        self.buf.key(&mut self.first, key);
        write(self.buf);
    }
}

impl Obj<'_> {
    /// Writes again the fields written at `text` (a range of [`JsonBuf::len`] positions of this
    /// buffer holding complete `"key":value` pairs separated by commas): an object that an
    /// answer lists twice is written once.
    pub fn fields_from(&mut self, text: std::ops::Range<usize>) {
        if text.is_empty() || text.end > self.buf.bytes.len() {
            return;
        }
        if !std::mem::take(&mut self.first) {
            self.buf.bytes.push(b',');
        }
        self.buf.bytes.extend_from_within(text);
    }

    /// The position in the buffer where the next field starts (after its comma).
    pub fn position(&self) -> usize {
        self.buf.len() + usize::from(!self.first)
    }

    /// The length of the text written so far.
    pub fn end(&self) -> usize {
        self.buf.len()
    }
}

impl Fields for Obj<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        self.buf.key(&mut self.first, key);
        self.buf.value(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(out: &mut impl Fields, n: u64) {
        out.field("id", &n);
        out.field("name", "a \"quoted\" name\n");
        out.field("tags", &["x", "y"]);
        out.field("none", &Option::<u64>::None);
        out.field("nested", &json!({"b": 1, "a": [true]}));
    }

    #[test]
    fn bytes_and_map_agree() {
        let mut map = Map::new();
        shape(&mut map, 7);
        let mut buf = JsonBuf::default();
        buf.object(|o| shape(o, 7));
        let bytes = buf.into_bytes().unwrap();
        assert_eq!(bytes, serde_json::to_vec(&Value::Object(map)).unwrap());
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"id":7,"name":"a \"quoted\" name\n","tags":["x","y"],"none":null,"nested":{"b":1,"a":[true]}}"#
        );
    }

    #[test]
    fn arrays_of_objects_and_nested_fields() {
        let mut buf = JsonBuf::default();
        buf.object(|o| {
            o.field_with("list", |b| b.objects([1_u64, 2], |o, n| shape(o, n)));
            o.field_with("empty", |b| {
                b.objects(Vec::<u64>::new(), |o, n| shape(o, n))
            });
            o.field_with("inner", |b| b.object(|o| o.field("k", &1)));
        });
        let value: Value = serde_json::from_slice(&buf.into_bytes().unwrap()).unwrap();
        assert_eq!(value["list"][1]["id"], json!(2));
        assert_eq!(value["list"].as_array().unwrap().len(), 2);
        assert_eq!(value["empty"], json!([]));
        assert_eq!(value["inner"], json!({"k": 1}));
    }

    #[test]
    fn keys_are_escaped_when_they_need_it_and_fields_can_be_written_again() {
        let mut buf = JsonBuf::default();
        buf.object(|o| {
            o.field("plain", &1);
            o.field("a\"b\\c\n", &2);
        });
        buf.bytes.push(b'\n');
        let mut copied = 0..0;
        buf.object(|o| {
            let start = o.position();
            shape(o, 3);
            copied = start..o.end();
        });
        buf.bytes.push(b'\n');
        buf.object(|o| {
            o.field("first", &0);
            o.fields_from(copied.clone());
        });
        buf.bytes.push(b'\n');
        buf.object(|o| o.fields_from(copied.clone()));
        let text = String::from_utf8(buf.into_bytes().unwrap()).unwrap();
        let values: Vec<Value> = text
            .split('\n')
            .map(|part| serde_json::from_str(part).unwrap())
            .collect();
        assert_eq!(values[0], json!({"plain": 1, "a\"b\\c\n": 2}));
        let mut map = Map::new();
        shape(&mut map, 3);
        assert_eq!(values[1], Value::Object(map.clone()));
        assert_eq!(values[3], Value::Object(map.clone()));
        map.shift_insert(0, "first".to_owned(), json!(0));
        assert_eq!(values[2], Value::Object(map));
    }

    #[test]
    fn a_value_json_cannot_hold_is_reported() {
        let mut buf = JsonBuf::default();
        let mut bad = std::collections::BTreeMap::new();
        bad.insert(vec![1_u8], 1_u8);
        buf.object(|o| o.field("bad", &bad));
        assert!(buf.into_bytes().is_none());
    }
}
