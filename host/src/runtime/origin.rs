//! Origins a task may reach over HTTP: the operator's allow-list (`--allow-http`) and a
//! batch's grant (`allow_http`), written `SCHEME://HOST[:PORT|:*]`.
//!
//! A request goes out only when its origin matches both lists. A grant is checked against
//! the operator's list when its batch is opened, and again at every request, since the
//! operator's list may have changed since.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The port part of an allowed origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// Exactly this port (the scheme's default when none is written).
    Is(u16),
    /// `:*`, any port.
    Any,
}

/// One entry of an allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedOrigin {
    pub scheme: Scheme,
    /// Lowercase; an IPv6 address without its brackets.
    pub host: String,
    pub port: Port,
}

/// Where one request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestOrigin {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
}

impl AllowedOrigin {
    /// The address this entry names, when its host is an IP address: such an entry lets
    /// a task reach that address even when it is private or loopback.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    pub fn matches(&self, origin: &RequestOrigin) -> bool {
        self.scheme == origin.scheme
            && self.host == origin.host
            && match self.port {
                Port::Is(port) => port == origin.port,
                Port::Any => true,
            }
    }

    /// Whether every origin `other` matches, this one matches too.
    pub fn covers(&self, other: &AllowedOrigin) -> bool {
        self.scheme == other.scheme
            && self.host == other.host
            && match (self.port, other.port) {
                (Port::Any, _) => true,
                (Port::Is(a), Port::Is(b)) => a == b,
                (Port::Is(_), Port::Any) => false,
            }
    }
}

impl FromStr for AllowedOrigin {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let shape = "write it SCHEME://HOST[:PORT|:*], such as `https://api.example.com` \
                     or `http://127.0.0.1:*`";
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("origin `{text}` has no scheme; {shape}"))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(format!(
                    "origin `{text}`: scheme `{other}` is not http or https"
                ));
            }
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(format!(
                "origin `{text}` has a path, query or user: an origin is only {shape}"
            ));
        }
        let (host, port) =
            split_host_port(rest).ok_or_else(|| format!("origin `{text}` has no host; {shape}"))?;
        let port = match port {
            None => Port::Is(scheme.default_port()),
            Some("*") => Port::Any,
            Some(port) => Port::Is(port.parse().ok().filter(|&p| p != 0).ok_or_else(|| {
                format!("origin `{text}`: port `{port}` is not 1 to 65535 or `*`")
            })?),
        };
        let host = host.to_ascii_lowercase();
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
        if host.parse::<IpAddr>().is_err() && !host.chars().all(plain) {
            return Err(format!(
                "origin `{text}`: host `{host}` is not a name or an IP address"
            ));
        }
        Ok(AllowedOrigin { scheme, host, port })
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; the host without brackets.
fn split_host_port(text: &str) -> Option<(&str, Option<&str>)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        match after {
            "" => (host, None),
            after => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    (!host.is_empty()).then_some((host, port))
}

impl fmt::Display for AllowedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_origin(f, self.scheme, &self.host)?;
        match self.port {
            Port::Is(port) if port == self.scheme.default_port() => Ok(()),
            Port::Is(port) => write!(f, ":{port}"),
            Port::Any => f.write_str(":*"),
        }
    }
}

impl RequestOrigin {
    /// The origin of a request's URI; `None` when it names no host.
    pub fn of(uri: &http::Uri) -> Option<Self> {
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => Scheme::Http,
            Some(s) if s.eq_ignore_ascii_case("https") => Scheme::Https,
            _ => return None,
        };
        let host = uri.host()?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(scheme.default_port());
        Some(RequestOrigin { scheme, host, port })
    }
}

impl fmt::Display for RequestOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_origin(f, self.scheme, &self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

fn write_origin(f: &mut fmt::Formatter<'_>, scheme: Scheme, host: &str) -> fmt::Result {
    if host.contains(':') {
        write!(f, "{}://[{host}]", scheme.as_str())
    } else {
        write!(f, "{}://{host}", scheme.as_str())
    }
}

/// Parses a grant's origins and checks that the operator's list covers each; the error
/// names the first that is malformed or not covered.
pub fn check_grant(
    operator: &[AllowedOrigin],
    grant: &[String],
) -> Result<Vec<AllowedOrigin>, String> {
    let mut parsed = Vec::with_capacity(grant.len());
    for text in grant {
        let origin: AllowedOrigin = text.parse()?;
        if !operator.iter().any(|allowed| allowed.covers(&origin)) {
            return Err(if operator.is_empty() {
                "this server allows no outbound HTTP (its operator gave no --allow-http)".into()
            } else {
                format!("origin `{text}` is not within the server's --allow-http list")
            });
        }
        parsed.push(origin);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(text: &str) -> AllowedOrigin {
        text.parse().unwrap()
    }

    fn request(uri: &str) -> RequestOrigin {
        RequestOrigin::of(&uri.parse().unwrap()).unwrap()
    }

    #[test]
    fn parses_origins_and_refuses_more_than_an_origin() {
        let api = allowed("HTTPS://API.example.com/");
        assert_eq!(api.to_string(), "https://api.example.com");
        assert_eq!(api.port, Port::Is(443));
        assert_eq!(allowed("http://127.0.0.1:*").port, Port::Any);
        assert_eq!(allowed("http://[::1]:8080").host, "::1");
        for bad in [
            "api.example.com",
            "ftp://x",
            "https://x/path",
            "https://u@x",
            "http://x:0",
            "http://x:http",
            "http://",
            "http://a b",
        ] {
            assert!(bad.parse::<AllowedOrigin>().is_err(), "{bad}");
        }
    }

    #[test]
    fn an_origin_matches_scheme_host_and_port() {
        let api = allowed("https://api.example.com");
        assert!(api.matches(&request("https://api.example.com/v1?q=1")));
        assert!(api.matches(&request("https://API.example.com:443/")));
        assert!(!api.matches(&request("http://api.example.com/")));
        assert!(!api.matches(&request("https://api.example.com:8443/")));
        assert!(!api.matches(&request("https://api.example.com.evil.net/")));
        let local = allowed("http://127.0.0.1:*");
        assert!(local.matches(&request("http://127.0.0.1:5000/x")));
        assert!(!local.matches(&request("http://127.0.0.2:5000/x")));
    }

    #[test]
    fn a_grant_must_lie_within_the_operators_list() {
        let operator = vec![
            allowed("http://127.0.0.1:*"),
            allowed("https://api.example.com"),
        ];
        assert!(check_grant(&operator, &["http://127.0.0.1:8080".into()]).is_ok());
        assert!(check_grant(&operator, &["http://127.0.0.1:*".into()]).is_ok());
        let err = check_grant(&operator, &["https://other.example.com".into()]).unwrap_err();
        assert!(err.contains("other.example.com"), "{err}");
        let narrow = vec![allowed("http://127.0.0.1:8080")];
        assert!(check_grant(&narrow, &["http://127.0.0.1:*".into()]).is_err());
        let none = check_grant(&[], &["https://api.example.com".into()]).unwrap_err();
        assert!(none.contains("allows no outbound HTTP"), "{none}");
    }
}
