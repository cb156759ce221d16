//! Which IP addresses a task's HTTP request may reach by name: public ones only.
//!
//! A host name on the allow-list could resolve, now or after a DNS change, to an address
//! inside the operator's network. So a name's addresses must all be public (globally
//! routable); a private, loopback or link-local address is reached only when the
//! allow-list names that very address (`http://127.0.0.1:*`), or for `localhost`, its
//! loopback addresses. The server's own listen addresses are apart ([`is_own`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether connecting to `ip` on `port` may reach one of the server's `own` listen
/// addresses: the same port, on the same address, on any loopback address for a loopback
/// one, or on any address not public for an unspecified one (`0.0.0.0`, `::`).
pub fn is_own(ip: IpAddr, port: u16, own: &[SocketAddr]) -> bool {
    let ip = ip.to_canonical();
    own.iter().any(|listen| {
        let at = listen.ip().to_canonical();
        listen.port() == port
            && (at == ip
                || (at.is_loopback() && ip.is_loopback())
                || (at.is_unspecified() && !is_public(ip)))
    })
}

/// Whether `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    // NAT64 (64:ff9b::/96) reaches the IPv4 address it embeds.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        return is_public_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local
        || (segments[0] & 0xffc0) == 0xfe80 // link-local
        || (segments[0] & 0xffc0) == 0xfec0 // site-local
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || segments[..4] == [0x100, 0, 0, 0] // discard
        || segments[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible, deprecated
}

#[cfg(test)]
mod tests {
    use super::{is_own, is_public};

    #[test]
    fn own_addresses_are_those_a_listener_takes() {
        let own = ["127.0.0.1:7700".parse().unwrap()];
        assert!(is_own("127.0.0.1".parse().unwrap(), 7700, &own));
        assert!(is_own("::1".parse().unwrap(), 7700, &own));
        assert!(!is_own("127.0.0.1".parse().unwrap(), 7701, &own));
        let any = ["0.0.0.0:7700".parse().unwrap()];
        assert!(is_own("10.0.0.5".parse().unwrap(), 7700, &any));
        assert!(is_own("::ffff:127.0.0.1".parse().unwrap(), 7700, &any));
        assert!(!is_own("93.184.216.34".parse().unwrap(), 7700, &any));
    }

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
        for inner in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(inner.parse().unwrap()), "{inner}");
        }
    }
}
