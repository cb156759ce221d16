//! The command line reaches a server over `https://`: a certificate from a CA the system
//! trusts (here named by `SSL_CERT_FILE`) is accepted, one from an unknown CA is refused,
//! and a plain-HTTP server behind an `https://` URL is told apart, each with what to do.
//!
//! `qhost serve` speaks plain HTTP, so the TLS server here is a small one of the test's
//! own (rustls, with a certificate made on the spot) that answers any request as
//! `GET /v1/running` would on an idle server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use qhost_tests::server::{Server, bare_cli};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A CA of the test's own, its certificate written as PEM to `dir/NAME.pem`.
struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem_file: PathBuf,
}

impl TestCa {
    fn new(dir: &Path, name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("qhost test CA {name}"));
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let pem_file = dir.join(format!("{name}.pem"));
        std::fs::write(&pem_file, issuer.pem()).unwrap();
        TestCa { issuer, pem_file }
    }
}

/// Serves TLS for `localhost` with a certificate `ca` signed, on a port of its own; each
/// connection gets one answer, `[]`, whatever it asked. Returns the port.
fn tls_server(ca: &TestCa) -> u16 {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca.issuer)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            let connection = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut stream = rustls::StreamOwned::new(connection, tcp);
            // A client that refused the certificate fails this read: next connection.
            let mut reader = BufReader::new(&mut stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\
                  connection: close\r\n\r\n[]",
            );
            let _ = stream.flush();
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
    });
    port
}

#[test]
fn an_https_server_with_a_trusted_certificate_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "trusted");
    let port = tls_server(&ca);
    let output = bare_cli()
        .args(["nodes", "--json", "--token", "qha_any"])
        .arg("--server")
        .arg(format!("https://localhost:{port}"))
        .env("SSL_CERT_FILE", &ca.pem_file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "[]");
}

#[test]
fn a_certificate_from_an_unknown_ca_is_refused_saying_how_to_trust_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = tls_server(&TestCa::new(dir.path(), "server's"));
    let other = TestCa::new(dir.path(), "other");
    let output = bare_cli()
        .args(["status", "--token", "qha_any"])
        .arg("--server")
        .arg(format!("https://localhost:{port}"))
        .env("SSL_CERT_FILE", &other.pem_file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains(&format!(
            "TLS with the qhost server at https://localhost:{port}"
        )) && message.contains("certificate is not trusted")
            && message.contains("SSL_CERT_FILE"),
        "{message}"
    );
}

#[test]
fn https_to_a_plain_http_server_says_to_give_http() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let https = format!("https://{}", server.address());
    let output = server
        .cli()
        .args(["status", "--server", &https])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("TLS with the qhost server at {https} failed"))
            && message.contains("give http://"),
        "{message}"
    );
    assert!(server.stop().success());
}
