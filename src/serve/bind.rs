//! Binding the exporter's listening sockets before the runtime starts, so an address that
//! cannot be had is a usage error naming where it was set: `--listen` (one IP:PORT), or each
//! `--web.listen-address` or `[serve] web_listen_address` entry (`:PORT` is every interface, dual-stack where the host has IPv6; a
//! host name is each address it resolves to). Owns nothing after start-up.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs};

use crate::config::{ListenAddress, ServeSettings};

/// Every socket the settings ask for, listening and non-blocking.
pub fn bind_all(settings: &ServeSettings) -> Result<Vec<TcpListener>, String> {
    if settings.listen_addresses.is_empty() {
        return Ok(vec![bind(settings.listen, &settings.listen_origin)?]);
    }
    let mut all = Vec::new();
    for address in &settings.listen_addresses {
        let origin = format!("{} {address}", settings.listen_origin);
        all.extend(bind_address(address, &origin)?);
    }
    Ok(all)
}

fn bind_address(address: &ListenAddress, origin: &str) -> Result<Vec<TcpListener>, String> {
    match address {
        ListenAddress::Socket(addr) => Ok(vec![bind(*addr, origin)?]),
        ListenAddress::Every(port) => {
            // [::] takes IPv4 too (unless the host set bindv6only); a host without IPv6
            // refuses it, and 0.0.0.0 is every interface there.
            let v6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, *port));
            match try_bind(v6) {
                Ok(l) => Ok(vec![l]),
                Err(e) if !taken(&e) => Ok(vec![bind(
                    SocketAddr::from((Ipv4Addr::UNSPECIFIED, *port)),
                    origin,
                )?]),
                Err(e) => Err(failed(origin, v6, &e)),
            }
        }
        ListenAddress::Host(host, port) => {
            let addrs: Vec<SocketAddr> = (host.as_str(), *port)
                .to_socket_addrs()
                .map_err(|e| format!("{origin}: cannot look up {host}: {e}"))?
                .collect();
            let mut bound = Vec::new();
            let mut unusable = None;
            for addr in addrs {
                match try_bind(addr) {
                    Ok(l) => bound.push(l),
                    // `localhost` is also ::1 on a host without IPv6: skip what the host
                    // cannot have, as long as one address works.
                    Err(e) if !taken(&e) => unusable = Some(failed(origin, addr, &e)),
                    Err(e) => return Err(failed(origin, addr, &e)),
                }
            }
            match (bound.is_empty(), unusable) {
                (false, _) => Ok(bound),
                (true, Some(why)) => Err(why),
                (true, None) => Err(format!("{origin}: {host} has no address")),
            }
        }
    }
}

/// Whether a bind failed because someone has the port (or we may not have it), as opposed
/// to the address not existing on this host.
fn taken(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::AddrInUse | ErrorKind::PermissionDenied)
}

fn failed(origin: &str, addr: SocketAddr, e: &std::io::Error) -> String {
    format!("{origin}: cannot listen on {addr}: {e}")
}

/// Binds one address, listening with a deep accept queue, non-blocking (as tokio needs).
/// `origin` names where the address was set.
pub fn bind(addr: SocketAddr, origin: &str) -> Result<TcpListener, String> {
    try_bind(addr).map_err(|e| failed(origin, addr, &e))
}

fn try_bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(addr)?;
    super::listener::deepen_backlog(&listener);
    listener.set_nonblocking(true)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_a_usage_error_naming_the_address() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = bind(addr, "--listen").unwrap_err();
        assert!(err.contains(&addr.to_string()), "{err}");
        assert!(!err.contains('\n'));
        let err = bind_address(&ListenAddress::Host("localhost".into(), addr.port()), "x")
            .err()
            .unwrap();
        assert!(
            err.contains("Address already in use") || err.contains("in use"),
            "{err}"
        );
    }

    #[test]
    fn every_interface_and_a_host_name_bind() {
        let every = bind_address(&ListenAddress::Every(0), "x").unwrap();
        assert_eq!(every.len(), 1);
        assert!(every[0].local_addr().unwrap().ip().is_unspecified());
        let local = bind_address(&ListenAddress::Host("localhost".into(), 0), "x").unwrap();
        assert!(
            local
                .iter()
                .all(|l| l.local_addr().unwrap().ip().is_loopback())
        );
    }
}
