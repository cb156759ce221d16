//! `qhost module add|ls|rm|unname`: the components a server can run, and their names.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::client::{Client, ConnectArgs, print_json, print_table, time};
use crate::api::modules::NameRemoved;
use crate::runtime::Digest;
use crate::scheduler::module_ref;
use crate::store::{ModuleAdded, ModuleInfo};

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
        /// A name tasks may use instead of the digest, added to the module's names; a name
        /// another module had moves to this one alone.
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
    /// Delete a module, with its names.
    Rm {
        /// The module: one of its names, its digest, or the start of its digest as
        /// `module ls` shows it.
        module: String,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a name; the module keeps its other names.
    Unname {
        /// The name.
        name: String,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
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
            let added: ModuleAdded = client.upload(&path, bytes)?;
            if json {
                print_json(&added)?;
            } else {
                let names = &added.module.names;
                outln!(
                    "added {} ({} bytes){}",
                    added.module.digest,
                    added.module.size,
                    match names.is_empty() {
                        true => String::new(),
                        false => format!(", named {}", names.join(", ")),
                    }
                )?;
                if let (Some(from), Some(name)) = (added.name_moved_from, &name) {
                    outln!("the name {name} moved here from {from}, which keeps its other names")?;
                }
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
                            m.names.join(", "),
                            m.tag.clone().unwrap_or_default(),
                            m.size.to_string(),
                            languages(m),
                            time(m.added_at),
                        ]
                    })
                    .collect();
                print_table(
                    &["DIGEST", "NAMES", "TAG", "BYTES", "LANGUAGES", "ADDED"],
                    &rows,
                )?;
            }
        }
        ModuleCommand::Rm { module, json } => {
            let digest = resolve(&client, &module)?;
            client.call("DELETE", &format!("/v1/modules/{digest}"), None)?;
            if json {
                print_json(&serde_json::json!({ "deleted": digest }))?;
                return Ok(ExitCode::SUCCESS);
            }
            outln!("deleted {digest}")?;
        }
        ModuleCommand::Unname { name, json } => {
            let path = format!("/v1/modules/names/{}", encode(&name));
            let answer = client.call("DELETE", &path, None)?;
            if json {
                print_json(&answer)?;
                return Ok(ExitCode::SUCCESS);
            }
            let removed: NameRemoved = serde_json::from_value(answer)?;
            outln!(
                "removed the name {name} from {}, which keeps its other names",
                removed.module
            )?;
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
    let named = module_ref::find(module, &modules).map_err(super::exit::not_found)?;
    Ok(named.digest())
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
