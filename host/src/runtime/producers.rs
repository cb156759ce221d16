//! [`Producers`]: what a component says made it, read from the `producers` custom
//! sections of the component and of every core module nested in it (the tool
//! conventions' `language` and `processed-by` fields), so that a module list can show
//! its languages.

use wasmparser::{KnownCustom, Parser, Payload};

/// The languages and tools a component's `producers` sections name, each once, in the
/// order first met. They are every part's: a component built from C names Rust too (the
/// WASI adapter's), and one whose interpreter's module names no language (componentize-py,
/// QuickJS) names only its glue's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Producers {
    /// Source languages, as `Rust` or `C11` (with a version when one is given).
    pub languages: Vec<String>,
    /// The tools that made or changed it, as `rustc 1.95.0 (...)` or `wit-component 0.240.0`.
    pub processed_by: Vec<String>,
}

impl Producers {
    /// Reads them from a component's (or a core module's) bytes. What cannot be parsed
    /// names nothing: these sections are informative, the runtime checks the component.
    pub fn of(bytes: &[u8]) -> Producers {
        let mut producers = Producers::default();
        // `parse_all` walks into nested modules and components as it meets them.
        for payload in Parser::new(0).parse_all(bytes) {
            let Ok(Payload::CustomSection(section)) = payload else {
                if payload.is_err() {
                    break;
                }
                continue;
            };
            let KnownCustom::Producers(reader) = section.as_known() else {
                continue;
            };
            for field in reader.into_iter().flatten() {
                let list = match field.name {
                    "language" => &mut producers.languages,
                    "processed-by" => &mut producers.processed_by,
                    _ => continue,
                };
                for value in field.values.into_iter().flatten() {
                    // The conventions spell C++ so (`C_plus_plus_14`); people read `C++14`.
                    let name = value.name.replace("C_plus_plus_", "C++");
                    let entry = format!("{name} {}", value.version).trim().to_string();
                    if !entry.is_empty() && !list.contains(&entry) {
                        list.push(entry);
                    }
                }
            }
        }
        producers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_no_wasm_name_nothing() {
        assert_eq!(Producers::of(b"not wasm"), Producers::default());
    }

    #[test]
    fn a_core_module_names_its_language_and_tools() {
        // A core module with only a `producers` section: language Rust, processed-by
        // rustc 1.0.
        let mut section = vec![2u8];
        for (field, name, version) in [("language", "Rust", ""), ("processed-by", "rustc", "1.0")] {
            section.push(field.len() as u8);
            section.extend(field.as_bytes());
            section.push(1);
            section.push(name.len() as u8);
            section.extend(name.as_bytes());
            section.push(version.len() as u8);
            section.extend(version.as_bytes());
        }
        let mut custom = vec![9u8];
        custom.extend(b"producers");
        custom.extend(&section);
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        module.push(0);
        module.push(custom.len() as u8);
        module.extend(custom);
        assert_eq!(
            Producers::of(&module),
            Producers {
                languages: vec!["Rust".into()],
                processed_by: vec!["rustc 1.0".into()],
            }
        );
    }
}
