//! [`Defines`]: the names and values a shader is composed with (`#ifdef NAME`,
//! `${NAME}`; see [`super::shader`]). One name has one value: setting a name again
//! replaces its value and keeps its place, so a list built in steps (the model's defines,
//! then the tile's, then the kernel's) reads like the pairs it was built from, later
//! ones winning.

use std::fmt;

/// Shader defines: (name, value) pairs in the order their names were first set, each
/// name once. A flag (`#ifdef NAME`) is a name whose value is `1`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Defines(Vec<(String, String)>);

impl Defines {
    /// No defines.
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    /// These defines with `name` set to `value` (see [`Self::set`]).
    #[must_use]
    pub fn with(mut self, name: &str, value: impl fmt::Display) -> Self {
        self.set(name, value);
        self
    }

    /// These defines with the flag `name` (`name=1`).
    #[must_use]
    pub fn flag(self, name: &str) -> Self {
        self.with(name, 1)
    }

    /// Set `name` to `value`: a new name goes last, a known one keeps its place and takes
    /// the new value.
    pub fn set(&mut self, name: &str, value: impl fmt::Display) {
        let value = value.to_string();
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.0.push((name.to_owned(), value)),
        }
    }

    /// Set every define of `other` (its values win).
    pub fn extend(&mut self, other: &Defines) {
        for (name, value) in other.iter() {
            self.set(name, value);
        }
    }

    /// These defines with every define of `other` set (its values win).
    #[must_use]
    pub fn merged(mut self, other: &Defines) -> Self {
        self.extend(other);
        self
    }

    /// Forget `name`.
    pub fn remove(&mut self, name: &str) {
        self.0.retain(|(n, _)| n != name);
    }

    /// The value of `name`, if it is defined.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `name` is defined (whatever its value).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The (name, value) pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Whether nothing is defined.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<N: AsRef<str>, V: fmt::Display> FromIterator<(N, V)> for Defines {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(pairs: I) -> Self {
        let mut defines = Self::new();
        for (name, value) in pairs {
            defines.set(name.as_ref(), value);
        }
        defines
    }
}

impl<N: AsRef<str>, V: fmt::Display, const K: usize> From<[(N, V); K]> for Defines {
    fn from(pairs: [(N, V); K]) -> Self {
        pairs.into_iter().collect()
    }
}

impl fmt::Display for Defines {
    /// `A=1, B=2`, as error messages name a shader variant.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_set_again_keeps_its_place_and_takes_the_new_value() {
        let mut d = Defines::new().with("A", 1).flag("B").with("C", "x");
        d.set("A", 7);
        assert_eq!(d.to_string(), "A=7, B=1, C=x");
        d.extend(&Defines::from([("C", "y"), ("D", "2")]));
        assert_eq!(d.to_string(), "A=7, B=1, C=y, D=2");
        d.remove("B");
        assert!(!d.contains("B"));
        assert_eq!(d.get("D"), Some("2"));
        assert_eq!(d.iter().count(), 3);
        assert!(Defines::new().is_empty());
        assert_eq!(Defines::from([("E", "")]).get("E"), Some(""));
    }
}
