//! How people name a module: by one of its names, by its digest, or by the start of its
//! digest as `qhost module ls` shows it; which stored module such a reference names, and, when none
//! does, the message that says why (the candidates of an ambiguous prefix, the minimum
//! length of one, the nearest name).
//!
//! The server resolves the `module` of every submitted task here; the command line resolves
//! `module rm` here too, from the list the server gives.

use crate::runtime::Digest;
use crate::store::ModuleInfo;

/// Hex digits of a digest that `module ls` shows.
pub const SHOWN_DIGITS: usize = 12;
/// The fewest hex digits that name a module by the start of its digest.
pub const MIN_PREFIX: usize = 6;
/// How alike (Jaro-Winkler, 0 to 1) a name must be to a reference to be suggested for it.
const SUGGEST_ABOVE: f64 = 0.8;

/// What a reference names.
#[derive(Debug)]
pub enum Named<'a> {
    /// The module that has that name (a name names one module).
    Name(&'a ModuleInfo),
    /// A digest: given whole (whether stored or not), or the one stored digest that starts
    /// with the reference.
    Digest(Digest),
}

impl Named<'_> {
    /// The digest a submission runs.
    pub fn digest(&self) -> Digest {
        match self {
            Named::Name(module) => module.digest,
            Named::Digest(digest) => *digest,
        }
    }
}

/// Finds what `reference` names among `modules` (oldest first): a whole digest names
/// itself (so needs no list); else a name is looked for, then the start of a digest.
pub fn find<'a>(reference: &str, modules: &'a [ModuleInfo]) -> Result<Named<'a>, String> {
    if let Ok(digest) = Digest::from_hex(reference) {
        return Ok(Named::Digest(digest));
    }
    if let Some(named) = modules
        .iter()
        .find(|m| m.names.iter().any(|n| n == reference))
    {
        return Ok(Named::Name(named));
    }
    let hex = !reference.is_empty() && reference.chars().all(|c| c.is_ascii_hexdigit());
    if !hex {
        return Err(unknown(reference, modules));
    }
    if reference.len() < MIN_PREFIX {
        return Err(format!(
            "no module has the name `{reference}`, and as the start of a digest it is too \
             short: give at least {MIN_PREFIX} hex digits ({SHOWN_DIGITS} are shown by \
             `qhost module ls`){}",
            suggestion(reference, modules)
        ));
    }
    let prefix = reference.to_ascii_lowercase();
    let starting: Vec<&ModuleInfo> = modules
        .iter()
        .filter(|m| m.digest.to_hex().starts_with(&prefix))
        .collect();
    match starting.as_slice() {
        [] => Err(unknown(reference, modules)),
        [one] => Ok(Named::Digest(one.digest)),
        many => Err(format!(
            "{} modules have digests starting with `{reference}`: {}; give more digits",
            many.len(),
            many.iter()
                .map(|m| describe(m))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A module as a message names it: its digest, with its name when it has one.
pub fn describe(module: &ModuleInfo) -> String {
    match &module.name {
        Some(name) => format!("{} ({name})", module.digest),
        None => module.digest.to_string(),
    }
}

fn unknown(reference: &str, modules: &[ModuleInfo]) -> String {
    format!(
        "no module has the digest or name `{reference}`{}",
        suggestion(reference, modules)
    )
}

/// `; did you mean `NAME`?` for the stored name most like `reference`, if one is alike
/// enough; else nothing.
fn suggestion(reference: &str, modules: &[ModuleInfo]) -> String {
    let wanted = reference.to_lowercase();
    let nearest = modules
        .iter()
        .flat_map(|m| m.names.iter().map(String::as_str))
        .map(|name| (strsim::jaro_winkler(&wanted, &name.to_lowercase()), name))
        .filter(|(likeness, _)| *likeness > SUGGEST_ABOVE)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match nearest {
        Some((_, name)) => format!("; did you mean `{name}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(hex_start: &str, names: &[&str], added_at: i64) -> ModuleInfo {
        let hex = format!("{hex_start:0<64}");
        ModuleInfo {
            digest: Digest::from_hex(&hex).unwrap(),
            name: names.last().map(|n| n.to_string()),
            names: names.iter().map(|n| n.to_string()).collect(),
            tag: None,
            size: 1,
            added_at,
            languages: None,
            processed_by: None,
        }
    }

    #[test]
    fn a_name_a_digest_or_its_start_names_a_module() {
        let modules = [
            module("abcdef01", &["echo"], 1),
            module("abcdef02", &[], 2),
            module("123456", &["echo2", "shout"], 3),
        ];
        // Any of a module's names names it.
        for (name, named) in [("echo", 0), ("echo2", 2), ("shout", 2)] {
            let Ok(found) = find(name, &modules) else {
                panic!("{name} not found by name");
            };
            assert!(matches!(found, Named::Name(_)), "{name}");
            assert_eq!(found.digest(), modules[named].digest, "{name}");
        }
        let whole = modules[1].digest.to_hex();
        for reference in [&whole[..], &whole[..SHOWN_DIGITS], "ABCDEF02"] {
            assert!(
                matches!(find(reference, &modules), Ok(Named::Digest(d)) if d == modules[1].digest),
                "{reference}"
            );
        }
    }

    #[test]
    fn a_reference_that_names_no_one_module_says_why() {
        let modules = [
            module("abcdef01", &["echo"], 1),
            module("abcdef02", &["sha256"], 2),
        ];
        let ambiguous = find("abcdef", &modules).unwrap_err();
        assert!(
            ambiguous.starts_with("2 modules have digests starting with `abcdef`")
                && ambiguous.contains(&format!("{} (echo)", modules[0].digest))
                && ambiguous.contains(&format!("{} (sha256)", modules[1].digest)),
            "{ambiguous}"
        );
        let short = find("abc", &modules).unwrap_err();
        assert!(short.contains("at least 6 hex digits"), "{short}");
        let typo = find("ehco", &modules).unwrap_err();
        assert_eq!(
            typo,
            "no module has the digest or name `ehco`; did you mean `echo`?"
        );
        let unlike = find("wordcount", &modules).unwrap_err();
        assert_eq!(unlike, "no module has the digest or name `wordcount`");
        let nowhere = find("fedcba98", &modules).unwrap_err();
        assert_eq!(nowhere, "no module has the digest or name `fedcba98`");
    }
}
