//! `qhost module add|ls|rm`: the components a server can run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::client::{Client, ConnectArgs, print_json, print_table, time};
use crate::runtime::Digest;
use crate::scheduler::module_ref::{self, Named};
use crate::store::ModuleInfo;

#[derive(Debug, Args)]
pub struct ModuleArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: ModuleCommand,
}

#[derive(Debug, Subcommand)]
pub enum ModuleCommand {
    /// Upload a component; the server checks and compiles it.
    Add {
        /// The component (.wasm).
        file: PathBuf,
        /// The name tasks may use instead of the digest.
        #[arg(long)]
        name: Option<String>,
        /// A label kept with the module and shown by `module ls`, such as its version.
        #[arg(long)]
        tag: Option<String>,
        /// Print the module as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the modules.
    Ls {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a module.
    Rm {
        /// The module: its name, its digest, or the start of its digest as `module ls`
        /// shows it.
        module: String,
    },
}

pub fn run(args: ModuleArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    match args.command {
        ModuleCommand::Add {
            file,
            name,
            tag,
            json,
        } => {
            let bytes =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let mut query = Vec::new();
            if let Some(name) = &name {
                query.push(format!("name={}", encode(name)));
            }
            if let Some(tag) = &tag {
                query.push(format!("tag={}", encode(tag)));
            }
            let path = format!("/v1/modules?{}", query.join("&"));
            let module: ModuleInfo = client.upload(&path, bytes)?;
            if json {
                print_json(&module)?;
            } else {
                outln!(
                    "added {} ({} bytes){}",
                    module.digest,
                    module.size,
                    module
                        .name
                        .as_deref()
                        .map(|n| format!(" as {n}"))
                        .unwrap_or_default()
                )?;
            }
        }
        ModuleCommand::Ls { json } => {
            let modules: Vec<ModuleInfo> = client.get("/v1/modules")?;
            if json {
                print_json(&modules)?;
            } else {
                let rows: Vec<Vec<String>> = modules
                    .iter()
                    .map(|m| {
                        vec![
                            m.digest.to_string()[..module_ref::SHOWN_DIGITS].to_owned(),
                            m.name.clone().unwrap_or_default(),
                            m.tag.clone().unwrap_or_default(),
                            m.size.to_string(),
                            languages(m),
                            time(m.added_at),
                        ]
                    })
                    .collect();
                print_table(
                    &["DIGEST", "NAME", "TAG", "BYTES", "LANGUAGES", "ADDED"],
                    &rows,
                )?;
            }
        }
        ModuleCommand::Rm { module } => {
            let digest = resolve(&client, &module)?;
            client.call("DELETE", &format!("/v1/modules/{digest}"), None)?;
            outln!("deleted {digest}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A module's languages, `unknown` when it names none or was stored before they were
/// read.
fn languages(module: &ModuleInfo) -> String {
    match module.languages.as_deref() {
        Some(list) if !list.is_empty() => list.join(", "),
        _ => "unknown".into(),
    }
}

/// The digest of the one module a name, a digest or the start of a digest names.
fn resolve(client: &Client, module: &str) -> anyhow::Result<Digest> {
    if let Ok(digest) = Digest::from_hex(module) {
        return Ok(digest);
    }
    let modules: Vec<ModuleInfo> = client.get("/v1/modules")?;
    match module_ref::find(module, &modules).map_err(|e| anyhow::anyhow!(e))? {
        Named::Digest(digest) => Ok(digest),
        Named::Name(named) => match named.as_slice() {
            [one] => Ok(one.digest),
            many => anyhow::bail!(
                "{} modules are named `{module}`; give the digest of one: {}",
                many.len(),
                many.iter()
                    .map(|m| m.digest.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
