//! A minimal JSON value and writer for the bench reports (no dependency).

use std::fmt::Write;

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Bool(bool),
    Int(i64),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(key, value)` pairs, keeping their order.
    pub fn obj<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Obj(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A duration in milliseconds, rounded to microseconds.
    pub fn ms(x: f64) -> Json {
        Json::Num((x * 1e3).round() / 1e3)
    }

    /// Pretty-printed text.
    pub fn pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }

    fn write(&self, s: &mut String, indent: usize) {
        let pad = |s: &mut String, n: usize| s.extend(std::iter::repeat_n(' ', n));
        match self {
            Json::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(s, "{i}");
            }
            Json::Num(x) if x.is_finite() => {
                let _ = write!(s, "{x}");
            }
            Json::Num(_) => s.push_str("null"),
            Json::Str(t) => {
                s.push('"');
                for c in t.chars() {
                    match c {
                        '"' => s.push_str("\\\""),
                        '\\' => s.push_str("\\\\"),
                        '\n' => s.push_str("\\n"),
                        c if (c as u32) < 0x20 => {
                            let _ = write!(s, "\\u{:04x}", c as u32);
                        }
                        c => s.push(c),
                    }
                }
                s.push('"');
            }
            Json::Arr(v) if v.iter().all(|x| !matches!(x, Json::Arr(_) | Json::Obj(_))) => {
                s.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    x.write(s, indent);
                }
                s.push(']');
            }
            Json::Arr(v) => {
                s.push_str("[\n");
                for (i, x) in v.iter().enumerate() {
                    pad(s, indent + 2);
                    x.write(s, indent + 2);
                    s.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                pad(s, indent);
                s.push(']');
            }
            Json::Obj(pairs) => {
                s.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    pad(s, indent + 2);
                    Json::Str(k.clone()).write(s, indent + 2);
                    s.push_str(": ");
                    v.write(s, indent + 2);
                    s.push_str(if i + 1 < pairs.len() { ",\n" } else { "\n" });
                }
                pad(s, indent);
                s.push('}');
            }
        }
    }
}

impl From<f64> for Json {
    fn from(x: f64) -> Json {
        Json::Num(x)
    }
}
impl From<i64> for Json {
    fn from(x: i64) -> Json {
        Json::Int(x)
    }
}
impl From<bool> for Json {
    fn from(x: bool) -> Json {
        Json::Bool(x)
    }
}
impl From<&str> for Json {
    fn from(x: &str) -> Json {
        Json::Str(x.to_string())
    }
}
impl From<String> for Json {
    fn from(x: String) -> Json {
        Json::Str(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_values_and_escapes_strings() {
        let j = Json::obj([
            ("command", Json::from("repair")),
            ("grid", Json::Arr(vec![2i64.into(), 2i64.into()])),
            ("ok", true.into()),
            ("note", "a \"quoted\"\nline".into()),
            ("nan", f64::NAN.into()),
            ("t", Json::ms(1.23456789)),
        ]);
        let t = j.pretty();
        assert!(t.contains("\"grid\": [2, 2]"), "{t}");
        assert!(t.contains("\"ok\": true"), "{t}");
        assert!(t.contains("a \\\"quoted\\\"\\nline"), "{t}");
        assert!(t.contains("\"nan\": null"), "{t}");
        assert!(t.contains("\"t\": 1.235"), "{t}");
    }
}
