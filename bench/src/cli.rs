//! Command-line parsing for `ftla`: a subcommand, then `--name value` /
//! `--flag` options, each documented in the help text.

use std::collections::BTreeMap;

/// One option of a subcommand.
#[derive(Clone, Copy)]
pub struct OptSpec {
    pub name: &'static str,
    /// Placeholder of the value (`None`: a flag).
    pub value: Option<&'static str>,
    pub help: &'static str,
}

/// A subcommand with its options.
pub struct CommandSpec {
    pub name: &'static str,
    pub summary: &'static str,
    pub usage: &'static str,
    pub options: &'static [OptSpec],
}

/// Parsed options of one subcommand.
#[derive(Debug, Default)]
pub struct Opts {
    values: BTreeMap<String, String>,
    flags: Vec<String>,
}

/// A usage error, printed with the subcommand's help hint.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl CommandSpec {
    /// The help text of this subcommand.
    pub fn help(&self) -> String {
        let mut s = format!("{}\n\nUsage: {}\n\nOptions:\n", self.summary, self.usage);
        for o in self.options {
            let left = match o.value {
                Some(v) => format!("--{} {v}", o.name),
                None => format!("--{}", o.name),
            };
            s.push_str(&format!("  {left:<28} {}\n", o.help));
        }
        s.push_str(&format!("  {:<28} {}\n", "--help", "print this help"));
        s
    }

    /// Parses `args` (after the subcommand name).
    pub fn parse(&self, args: &[String]) -> Result<Opts, UsageError> {
        let mut o = Opts::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let name = a
                .strip_prefix("--")
                .ok_or_else(|| UsageError(format!("unexpected argument `{a}` (options start with --)")))?;
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (name, None),
            };
            let spec = self
                .options
                .iter()
                .find(|s| s.name == name)
                .ok_or_else(|| UsageError(format!("unknown option --{name} for `ftla {}`", self.name)))?;
            match spec.value {
                Some(v) => {
                    let val = match inline {
                        Some(x) => x,
                        None => it.next().cloned().ok_or_else(|| UsageError(format!("--{name} needs a value {v}")))?,
                    };
                    o.values.insert(name.to_string(), val);
                }
                None => o.flags.push(name.to_string()),
            }
        }
        Ok(o)
    }
}

impl Opts {
    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// True when the flag `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    /// Parses the value of `--name` (or returns `default`).
    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, UsageError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| UsageError(format!("--{name}: `{v}` is not a valid number"))),
        }
    }

    /// Parses `--grid PxQ` (default `default`).
    pub fn grid(&self, default: (i32, i32)) -> Result<(i32, i32), UsageError> {
        match self.get("grid") {
            None => Ok(default),
            Some(v) => parse_grid(v),
        }
    }

    /// Parses a comma-separated list of ranks.
    pub fn ranks(&self, name: &str) -> Result<Option<Vec<i32>>, UsageError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .split(',')
                .map(|r| r.trim().parse::<i32>().map_err(|_| UsageError(format!("--{name}: `{r}` is not a rank"))))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
        }
    }
}

/// Parses `PxQ`.
pub fn parse_grid(v: &str) -> Result<(i32, i32), UsageError> {
    let bad = || UsageError(format!("--grid wants PxQ with P, Q ≥ 1 (e.g. 2x2), got `{v}`"));
    let (p, q) = v.split_once(['x', 'X']).ok_or_else(bad)?;
    let p: i32 = p.trim().parse().map_err(|_| bad())?;
    let q: i32 = q.trim().parse().map_err(|_| bad())?;
    if p < 1 || q < 1 {
        return Err(bad());
    }
    Ok((p, q))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: CommandSpec = CommandSpec {
        name: "t",
        summary: "test",
        usage: "ftla t",
        options: &[
            OptSpec { name: "grid", value: Some("PxQ"), help: "grid" },
            OptSpec { name: "kill", value: Some("R[,R...]"), help: "kill" },
            OptSpec { name: "compare", value: None, help: "flag" },
        ],
    };

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_values_flags_and_lists() {
        let o = SPEC.parse(&args(&["--grid", "2x3", "--kill=0,3", "--compare"])).unwrap();
        assert_eq!(o.grid((1, 1)).unwrap(), (2, 3));
        assert_eq!(o.ranks("kill").unwrap(), Some(vec![0, 3]));
        assert!(o.flag("compare"));
        assert!(SPEC.help().contains("--kill R[,R...]"));
    }

    #[test]
    fn rejects_unknown_options_and_bad_values() {
        assert!(SPEC.parse(&args(&["--nope"])).is_err());
        assert!(SPEC.parse(&args(&["grid"])).is_err());
        assert!(SPEC.parse(&args(&["--grid"])).is_err());
        for g in ["2", "0x2", "ax2", "2x-1"] {
            assert!(parse_grid(g).is_err(), "{g}");
        }
    }
}
