//! `qhost tenant add NAME`, `ls`, `set NAME`, `token NAME`, `tokens NAME`, `revoke NAME
//! ID`: the tenants who may open batches besides the admin, what their batches may do, and
//! their tokens (the admin's to do); `usage` (`tenant_usage.rs`): what tenants and
//! batches used (a tenant's token reads its own).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use super::client::{Client, ConnectArgs, print_json};
use super::module::encode;
use crate::api::tenants::{TenantList, TokenList};
use crate::scheduler::NewToken;
use crate::store::{Budget, TenantInfo, TenantMaxima, TokenInfo};

#[derive(Debug, Args)]
pub struct TenantArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: TenantCommand,
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Add a tenant (1 to 64 of a-z, 0-9, `-` and `_`).
    Add {
        /// The tenant's name.
        name: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the tenants, with how many tokens each holds, its tasks claimed and open now,
    /// its running and open limits, and the slot time, CPU time and memory its attempts
    /// have used.
    Ls {
        /// Print them as JSON, one array.
        #[arg(long)]
        json: bool,
    },
    /// Show what a tenant's batches may do, or change it: its priority ceiling, the groups
    /// outside its namespace (`NAME/...`) shared with it, the modules and origins it may
    /// use, its running and open limits, the most its tasks may ask and its CPU budget.
    Set(Box<SetArgs>),
    /// Show what tenants have used (every one for the admin, its own for a tenant's
    /// token), or what a batch's ended attempts have used (`--batch`).
    Usage {
        /// The batch whose usage to show.
        #[arg(long)]
        batch: Option<i64>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a token for a tenant and print it: it is shown this once.
    Token {
        /// The tenant's name.
        name: String,
        /// Print it as JSON, with its id.
        #[arg(long)]
        json: bool,
    },
    /// List a tenant's tokens (their ids, never their secrets).
    Tokens {
        /// The tenant's name.
        name: String,
        /// Print them as JSON, one array.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a tenant's token: it opens nothing from the next request on.
    Revoke {
        /// The tenant's name.
        name: String,
        /// The token's id: `qht_<id>_...`, or as `qhost tenant tokens` lists it.
        id: i64,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `qhost tenant set` changes.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The tenant's name.
    pub name: String,
    /// The highest priority its batches and tasks may be given; `server`: the
    /// server's ceiling (`--tenant-max-priority`). Its work not started above it drops to
    /// it.
    #[arg(long, allow_negative_numbers = true)]
    pub max_priority: Option<String>,
    /// The most of its tasks claimed at once, across its batches and the nodes (1 to
    /// 1000000); `none`: no limit.
    #[arg(long, value_name = "N")]
    pub max_running: Option<String>,
    /// The most of its tasks open at once (submitted, not ended), across its batches (1
    /// to 1000000000); `none`: no limit. Submissions and re-drives past it are refused.
    #[arg(long, value_name = "N")]
    pub max_open: Option<String>,
    /// The most its tasks may ask of a limit, as a task asks it (again for more):
    /// `memory=32MiB`, `timeout=5m`, `http_requests=10`, `http_sent=1MiB`,
    /// `http_received=16MiB`, `http_timeout=30s`; `NAME=server`: the server's again.
    #[arg(long, value_name = "NAME=VALUE")]
    pub max_limit: Vec<String>,
    /// What its attempts may use per period, as `METERS/PERIOD`: CPU time, memory-time
    /// (MiB-seconds, or SIZE*DURATION) and HTTP body bytes, joined by commas
    /// (`cpu=10s,memory=1GiB*1m,http=100MB/1h`; a bare duration is CPU: `10s/1h`).
    /// Periods start at multiples of theirs from the Unix epoch; `none`: no budget. At the
    /// budget, the task that crossed it ends with outcome `budget` and its tasks not
    /// started wait for the next period.
    #[arg(long, value_name = "METERS/PERIOD")]
    pub budget: Option<String>,
    /// Its share of the slots under saturation, against the other tenants' weights (1 to
    /// 10000): its attempts get slot time in that proportion.
    #[arg(long, value_name = "N")]
    pub weight: Option<u32>,
    /// Share a group with it (again for more).
    #[arg(long, value_name = "KEY")]
    pub share_group: Vec<String>,
    /// Stop sharing a group with it (again for more).
    #[arg(long, value_name = "KEY")]
    pub unshare_group: Vec<String>,
    /// Let its tasks run this module, by name or digest (again for more); from the
    /// first, they run only the modules allowed.
    #[arg(long, value_name = "MODULE", conflicts_with = "every_module")]
    pub allow_module: Vec<String>,
    /// Stop letting its tasks run this module (again for more).
    #[arg(long, value_name = "MODULE", conflicts_with = "every_module")]
    pub disallow_module: Vec<String>,
    /// Let its tasks run every module.
    #[arg(long)]
    pub every_module: bool,
    /// Let its batches be granted, and post webhooks to, this origin within the
    /// server's `--allow-http` (again for more); from the first, only those allowed.
    #[arg(long, value_name = "ORIGIN", conflicts_with = "every_origin")]
    pub allow_http: Vec<String>,
    /// Stop letting its batches reach this origin (again for more).
    #[arg(long, value_name = "ORIGIN", conflicts_with = "every_origin")]
    pub disallow_http: Vec<String>,
    /// Let its batches reach every origin of the server's `--allow-http`.
    #[arg(long)]
    pub every_origin: bool,
    /// Print it as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: TenantArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    match args.command {
        TenantCommand::Add { name, json } => {
            let added: TenantInfo = serde_json::from_value(client.call(
                "POST",
                "/v1/tenants",
                Some(&json!({ "name": name })),
            )?)?;
            if json {
                print_json(&added)?;
            } else {
                outln!(
                    "tenant {} added; make its token with `qhost tenant token {}`",
                    added.name,
                    added.name
                )?;
            }
        }
        TenantCommand::Ls { json } => {
            let list: TenantList = client.get("/v1/tenants")?;
            if json {
                print_json(&list.tenants)?;
            } else if list.tenants.is_empty() {
                outln!("no tenants")?;
            } else {
                let width = list
                    .tenants
                    .iter()
                    .map(|t| t.name.len())
                    .max()
                    .unwrap_or(6)
                    .max(6);
                outln!(
                    "{:<width$}  {:>6}  {:>6}  {:>7}  {:>11}  {:>10}  {:>10}  {:>12}  {:>11}  {:>18}",
                    "tenant",
                    "tokens",
                    "weight",
                    "running",
                    "max_running",
                    "open",
                    "max_open",
                    "slot_seconds",
                    "cpu_seconds",
                    "memory_mib_seconds"
                )?;
                let shown = |limit: Option<u32>| limit.map_or("-".to_owned(), |n| n.to_string());
                for t in &list.tenants {
                    outln!(
                        "{:<width$}  {:>6}  {:>6}  {:>7}  {:>11}  {:>10}  {:>10}  {:>12.3}  {:>11.3}  {:>18.3}",
                        t.name,
                        t.tokens,
                        t.weight,
                        t.running,
                        shown(t.max_running),
                        t.open,
                        shown(t.max_open),
                        t.slot_micros as f64 / 1e6,
                        t.cpu_micros as f64 / 1e6,
                        t.memory_mib_seconds
                    )?;
                }
            }
        }
        TenantCommand::Set(args) => {
            let SetArgs {
                name,
                max_priority,
                max_running,
                max_open,
                max_limit,
                budget,
                weight,
                share_group,
                unshare_group,
                allow_module,
                disallow_module,
                every_module,
                allow_http,
                disallow_http,
                every_origin,
                json,
            } = *args;
            let path = format!("/v1/tenants/{}", encode(&name));
            let mut change = serde_json::Map::new();
            if let Some(text) = max_priority {
                let ceiling = match text.as_str() {
                    "server" => serde_json::Value::Null,
                    text => json!(text.parse::<i32>().map_err(|_| anyhow::anyhow!(
                        "--max-priority `{text}`: a whole number, or `server`"
                    ))?),
                };
                change.insert("max_priority".into(), ceiling);
            }
            for (field, text) in [("max_running", max_running), ("max_open", max_open)] {
                if let Some(text) = text {
                    change.insert(field.into(), limit_or_none(field, &text)?);
                }
            }
            if let Some(text) = budget {
                let budget = match text.as_str() {
                    "none" => serde_json::Value::Null,
                    text => serde_json::to_value(
                        Budget::parse(text)
                            .map_err(|e| anyhow::anyhow!("--budget: {e}, or `none`"))?,
                    )?,
                };
                change.insert("budget".into(), budget);
            }
            if let Some(weight) = weight {
                change.insert("weight".into(), json!(weight));
            }
            let lists_change = !max_limit.is_empty()
                || !share_group.is_empty()
                || !unshare_group.is_empty()
                || !allow_module.is_empty()
                || !disallow_module.is_empty()
                || !allow_http.is_empty()
                || !disallow_http.is_empty();
            if lists_change {
                let list: TenantList = client.get("/v1/tenants")?;
                let current = list
                    .tenants
                    .into_iter()
                    .find(|t| t.name == name)
                    .ok_or_else(|| anyhow::anyhow!("no tenant is named `{name}`"))?;
                if !max_limit.is_empty() {
                    let maxima = with_maxima(&current.max_limits, &max_limit)?;
                    change.insert("max_limits".into(), maxima);
                }
                if !share_group.is_empty() || !unshare_group.is_empty() {
                    let groups = edited(current.shared_groups, share_group, &unshare_group);
                    change.insert("shared_groups".into(), json!(groups));
                }
                if !allow_module.is_empty() || !disallow_module.is_empty() {
                    let modules = edited(
                        current.modules.unwrap_or_default(),
                        allow_module,
                        &disallow_module,
                    );
                    change.insert("modules".into(), json!(modules));
                }
                if !allow_http.is_empty() || !disallow_http.is_empty() {
                    let origins = edited(
                        current.allow_http.unwrap_or_default(),
                        allow_http,
                        &disallow_http,
                    );
                    change.insert("allow_http".into(), json!(origins));
                }
            }
            if every_module {
                change.insert("modules".into(), serde_json::Value::Null);
            }
            if every_origin {
                change.insert("allow_http".into(), serde_json::Value::Null);
            }
            let tenant: TenantInfo = serde_json::from_value(client.call(
                "PATCH",
                &path,
                Some(&serde_json::Value::Object(change)),
            )?)?;
            if json {
                print_json(&tenant)?;
            } else {
                let ceiling = tenant
                    .max_priority
                    .map_or("the server's".to_owned(), |p| p.to_string());
                let shared = if tenant.shared_groups.is_empty() {
                    "none".to_owned()
                } else {
                    tenant.shared_groups.join(", ")
                };
                let modules = tenant
                    .modules
                    .map_or("every one".to_owned(), |m| m.join(", "));
                let origins = tenant
                    .allow_http
                    .map_or("the server's".to_owned(), |o| o.join(", "));
                let at_most = |limit: Option<u32>| {
                    limit.map_or("no limit".to_owned(), |n| format!("at most {n}"))
                };
                let running = at_most(tenant.max_running);
                let open = at_most(tenant.max_open);
                let maxima = serde_json::to_value(&tenant.max_limits)?;
                let given: Vec<String> = maxima
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(_, value)| !value.is_null())
                    .map(|(name, value)| match value.as_str() {
                        Some(text) => format!("{name} {text}"),
                        None => format!("{name} {value}"),
                    })
                    .collect();
                let maxima = match given.is_empty() {
                    true => "the server's".to_owned(),
                    false => given.join(", "),
                };
                let budget = super::tenant_usage::budget_text(
                    tenant.budget,
                    tenant.budget_used,
                    tenant.held_until,
                );
                outln!(
                    "tenant {}: priority at most {ceiling}; groups {}/... and shared: {shared}; \
                     modules: {modules}; origins: {origins}; running: {} ({running}); open: {} \
                     ({open}); weight: {}; budget: {budget}; task limits at most: {maxima}",
                    tenant.name,
                    tenant.name,
                    tenant.running,
                    tenant.open,
                    tenant.weight
                )?;
            }
        }
        TenantCommand::Token { name, json } => {
            let path = format!("/v1/tenants/{}/tokens", encode(&name));
            let made: NewToken = serde_json::from_value(client.call("POST", &path, None)?)?;
            if json {
                print_json(&made)?;
            } else {
                // The token alone on stdout, for `$(qhost tenant token NAME)`.
                outln!("{}", made.token)?;
                errln!(
                    "token {} of tenant {}: it is shown this once; revoke it with \
                     `qhost tenant revoke {} {}`",
                    made.info.id,
                    made.info.tenant,
                    made.info.tenant,
                    made.info.id
                );
            }
        }
        TenantCommand::Tokens { name, json } => {
            let path = format!("/v1/tenants/{}/tokens", encode(&name));
            let list: TokenList = client.get(&path)?;
            if json {
                print_json(&list.tokens)?;
            } else if list.tokens.is_empty() {
                outln!("tenant {name} has no tokens")?;
            } else {
                outln!("{:>6}  {:<7}", "token", "state")?;
                for t in &list.tokens {
                    let state = if t.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    };
                    outln!("{:>6}  {state:<7}", t.id)?;
                }
            }
        }
        TenantCommand::Usage { batch, json } => super::tenant_usage::print(&client, batch, json)?,
        TenantCommand::Revoke { name, id, json } => {
            let path = format!("/v1/tenants/{}/tokens/{id}", encode(&name));
            let revoked: TokenInfo = serde_json::from_value(client.call("DELETE", &path, None)?)?;
            if json {
                print_json(&revoked)?;
            } else {
                outln!("token {} of tenant {} revoked", revoked.id, revoked.tenant)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `list` with `added` and without `removed`.
fn edited(list: Vec<String>, added: Vec<String>, removed: &[String]) -> Vec<String> {
    let mut list: Vec<String> = list.into_iter().filter(|x| !removed.contains(x)).collect();
    list.extend(added);
    list
}

/// `current` maxima with each `NAME=VALUE` of `asked` set (`NAME=server`: left out).
fn with_maxima(current: &TenantMaxima, asked: &[String]) -> anyhow::Result<serde_json::Value> {
    let mut maxima = match serde_json::to_value(current)? {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    for item in asked {
        let Some((name, value)) = item.split_once('=') else {
            anyhow::bail!("--max-limit `{item}`: NAME=VALUE, such as memory=32MiB");
        };
        if value == "server" {
            maxima.remove(name);
            continue;
        }
        let value = match name {
            "http_requests" => json!(value.parse::<u32>().map_err(|_| anyhow::anyhow!(
                "--max-limit `{item}`: http_requests is a whole number"
            ))?),
            _ => json!(value),
        };
        maxima.insert(name.to_owned(), value);
    }
    Ok(serde_json::Value::Object(maxima))
}

/// A limit flag's value as the API takes it: a whole number, or `none` (null).
fn limit_or_none(field: &str, text: &str) -> anyhow::Result<serde_json::Value> {
    if text == "none" {
        return Ok(serde_json::Value::Null);
    }
    let flag = field.replace('_', "-");
    let n: u32 = text
        .parse()
        .map_err(|_| anyhow::anyhow!("--{flag} `{text}`: a whole number from 1, or `none`"))?;
    Ok(json!(n))
}
