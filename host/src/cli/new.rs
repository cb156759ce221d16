//! `qhost new NAME --lang rust|python|js|c`: writes a task project that builds to a
//! component with one command and passes `qhost run`, with the language's guest SDK and
//! the `qhost:task` WIT copied in (see [`super::new_templates`]), then prints the
//! commands that build it, run it and hand it to a server.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use super::new_templates::{self, Contents, File};

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The task's name: lowercase ASCII letters, digits, `-` and `_`, starting with a
    /// letter. It names the project's folder, its component and its module.
    pub name: String,
    /// The language of the task.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    pub lang: Lang,
    /// Where to write the project (default: a folder NAME here). It must not exist, or be
    /// empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    #[value(name = "js", alias = "javascript")]
    JavaScript,
    C,
}

impl Lang {
    fn title(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::JavaScript => "JavaScript",
            Lang::C => "C",
        }
    }

    fn files(self) -> Vec<File> {
        match self {
            Lang::Rust => new_templates::rust(),
            Lang::Python => new_templates::python(),
            Lang::JavaScript => new_templates::javascript(),
            Lang::C => new_templates::c(),
        }
    }

    /// The command that builds the component, run in the project's folder.
    fn build_command(self) -> &'static str {
        match self {
            Lang::Rust => "cargo build --release",
            Lang::Python | Lang::JavaScript | Lang::C => "./build.sh",
        }
    }

    /// The component the build writes, relative to the project's folder.
    fn component(self, name: &str) -> String {
        match self {
            Lang::Rust => format!(
                "target/wasm32-wasip2/release/{}.wasm",
                name.replace('-', "_")
            ),
            Lang::Python | Lang::JavaScript | Lang::C => format!("{name}.wasm"),
        }
    }
}

pub fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
    let next = create(&args)?;
    outln!("{next}")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the project; returns what to do next: the commands that build it, run it once
/// and hand it to a server.
fn create(args: &NewArgs) -> anyhow::Result<String> {
    check_name(&args.name, args.lang)?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    check_dir(&dir)?;
    for file in args.lang.files() {
        write(&dir, &file, &args.name)?;
    }
    let component = args.lang.component(&args.name);
    let name = &args.name;
    Ok(format!(
        "Wrote {}: a qhost task in {}. Build it and run it once:\n\n    \
         cd {}\n    \
         {}\n    \
         qhost run {component} --input world\n\n\
         Then on a server (qhost serve):\n\n    \
         qhost module add {component} --name {name}\n    \
         qhost submit --module {name} --input world --wait",
        dir.display(),
        args.lang.title(),
        shell_word(&dir.to_string_lossy()),
        args.lang.build_command(),
    ))
}

/// A name that is a folder, a file stem and a Rust package name alike.
fn check_name(name: &str, lang: Lang) -> anyhow::Result<()> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name.chars().all(allowed)
        || name.len() > 64
    {
        bail!(
            "the name `{name}` is not allowed: use 1 to 64 lowercase ASCII letters, digits, \
             `-` and `_`, starting with a letter (such as `resize-images`)"
        );
    }
    if lang == Lang::Rust && name.replace('_', "-").starts_with("qhost-guest") {
        bail!(
            "the name `{name}` is the SDK's crate's, which the project depends on: choose another"
        );
    }
    Ok(())
}

fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} exists and is not empty: choose another name, or another folder with --dir",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

fn write(dir: &Path, file: &File, name: &str) -> anyhow::Result<()> {
    let path = dir.join(file.path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating the folder {}", parent.display()))?;
    }
    let bytes = match file.contents {
        Contents::Template(text) => text
            .replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .into_bytes(),
        Contents::Text(text) => text.as_bytes().to_vec(),
        Contents::Binary(bytes) => bytes.to_vec(),
    };
    let mut out =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    out.write_all(&bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    if file.executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

/// `word` quoted for a POSIX shell when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./+:@".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_plain() {
        for good in ["a", "resize-images", "task_2"] {
            check_name(good, Lang::Rust).unwrap();
        }
        for bad in [
            "",
            "2fast",
            "Upper",
            "with space",
            "dots.no",
            "-x",
            &"a".repeat(65),
        ] {
            let error = check_name(bad, Lang::Python).unwrap_err().to_string();
            assert!(error.contains("is not allowed"), "{bad}: {error}");
        }
        assert!(check_name("qhost-guest", Lang::Rust).is_err());
        check_name("qhost-guest", Lang::C).unwrap();
    }

    #[test]
    fn a_folder_with_files_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
        let error = create(&NewArgs {
            name: "hello".into(),
            lang: Lang::Python,
            dir: Some(dir.path().to_path_buf()),
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("is not empty"), "{error}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn every_language_writes_its_files_with_the_name() {
        for lang in [Lang::Rust, Lang::Python, Lang::JavaScript, Lang::C] {
            let dir = tempfile::tempdir().unwrap();
            let project = dir.path().join("p");
            let next = create(&NewArgs {
                name: "my-task".into(),
                lang,
                dir: Some(project.clone()),
            })
            .unwrap();
            assert!(
                next.contains(&format!("\n    {}\n", lang.build_command())),
                "{next}"
            );
            assert!(next.contains(&format!("qhost run {} ", lang.component("my-task"))));
            for file in lang.files() {
                let path = project.join(file.path);
                let bytes = std::fs::read(&path).unwrap();
                if let Contents::Template(_) = file.contents {
                    let text = String::from_utf8(bytes).unwrap();
                    assert!(
                        !text.contains("{{name}}") && !text.contains("{{crate}}"),
                        "{} keeps a placeholder",
                        path.display()
                    );
                }
            }
            let build = std::fs::read_to_string(project.join(match lang {
                Lang::Rust => "Cargo.toml",
                _ => "build.sh",
            }))
            .unwrap();
            assert!(build.contains("my-task"), "{lang:?}");
        }
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("my-task"), "my-task");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
