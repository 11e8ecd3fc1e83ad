"""`tenure serve` over real TLS with two workers: the client, `tenure lease run` and `tenure
monitor` with a private CA; plain HTTP, an unknown CA and (mutual TLS) a missing or foreign
client certificate refused at the handshake; bad TLS options are exit 2 naming the option."""

from __future__ import annotations

import datetime
import ipaddress
import re
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from api.client import Client
from tests.conftest import ROOT, free_port, rid

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(
    folder: Path, stem: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate
) -> None:
    (folder / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (folder / f"{stem}.key").write_bytes(pem)


def make_pki(folder: Path, ca_name: str = "test CA") -> Path:
    """A self-signed CA (ca.pem), a server cert for 127.0.0.1 (server.pem/.key) and a client
    cert (client.pem/.key) it signed, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW)
        .not_valid_after(NOW + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for stem, usage in (("server", ExtendedKeyUsageOID.SERVER_AUTH), ("client", None)):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(stem))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW)
            .not_valid_after(NOW + datetime.timedelta(days=3650))
        )
        if usage is not None:
            ip = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
            builder = builder.add_extension(x509.SubjectAlternativeName([ip]), critical=False)
        _write(folder, stem, key, builder.sign(ca_key, hashes.SHA256()))
    return folder


@dataclass
class TlsServer:
    """`tenure serve --workers 2` over TLS; ``pki`` holds ca.pem and client.pem/.key."""

    process: subprocess.Popen[bytes]
    port: int
    pki: Path
    log: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def context(self, client_cert: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.pem"))
        if client_cert:
            context.load_cert_chain(self.pki / "client.pem", self.pki / "client.key")
        return context


def start_tls(root: Path, pki: Path, *extra: str) -> TlsServer:
    port, log = free_port(), root / "server.log"
    cmd = [sys.executable, "-m", "api", "serve", "--port", str(port), "--workers", "2"]
    cmd += ["--data", str(root / "data"), "--keys", str(root / "keys")]
    cmd += ["--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"), *extra]
    with log.open("ab") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=out)
    server = TlsServer(process, port, pki, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-2000:]
        try:
            httpx.get(server.url + "/healthz", verify=server.context(), timeout=1)
        except httpx.HTTPError:
            time.sleep(0.1)
            continue
        return server
    process.kill()
    raise RuntimeError(f"no TLS answer within 30 s: {log.read_text()[-2000:]}")


def stop(server: TlsServer) -> None:
    server.process.terminate()
    server.process.wait(timeout=20)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    root = tmp_path_factory.mktemp("tls")
    server = start_tls(root, make_pki(root / "pki"))
    yield server
    stop(server)


@pytest.fixture(scope="module")
def mutual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    """Mutual TLS, with the certificates made by the openssl block of docs/operations.md."""
    root = tmp_path_factory.mktemp("mtls")
    pki = root / "pki"
    pki.mkdir()
    text = (ROOT / "docs" / "operations.md").read_text()
    block = re.search(r"## TLS\n.*?```sh\n(.*?)```", text, re.S)
    assert block is not None
    subprocess.run(["bash", "-e", "-c", block.group(1)], cwd=pki, check=True, capture_output=True)
    server = start_tls(root, pki, "--tls-client-ca", str(pki / "ca.pem"))
    yield server
    stop(server)


def lease_run(server: TlsServer, *options: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", "lease", "run", rid("run"), "--url", server.url]
    cmd += [*options, "--", "sh", "-c", 'echo "token=$TENURE_FENCING_TOKEN"']
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_lease_over_https_on_two_workers(tls: TlsServer) -> None:
    resource = rid("tls")
    tokens = []
    for _ in range(6):  # a fresh connection each time: both workers take some
        with Client(tls.url, cacert=tls.pki / "ca.pem") as client:
            answer = client.acquire(resource, "h", 30)
            tokens.append(answer.fencing_token)
            assert answer.owner_token is not None
            client.release(resource, answer.owner_token)
    assert tokens == sorted(set(tokens)) and tokens[0] >= 1
    run = lease_run(tls, "--cacert", str(tls.pki / "ca.pem"))
    assert run.returncode == 0, run.stderr
    assert re.fullmatch(r"token=[1-9]\d*\n", run.stdout)


def test_monitor_checks_the_log_over_https(tls: TlsServer, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "api", "monitor", tls.url, "--once", "--json"]
    cmd += ["--cacert", str(tls.pki / "ca.pem"), "--state", str(tmp_path / "state.json")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr + done.stdout


def test_plain_http_and_an_unknown_ca_get_no_answer(tls: TlsServer) -> None:
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{tls.port}/healthz", timeout=5)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(tls.url + "/healthz", timeout=5)  # the system's CAs only
    run = lease_run(tls, "--wait", "1")
    assert run.returncode == 75 and "CERTIFICATE_VERIFY_FAILED" in run.stderr
    assert httpx.get(tls.url + "/healthz", verify=tls.context(), timeout=5).status_code == 200


def test_mutual_tls_serves_a_client_with_a_cert_of_its_ca(mutual: TlsServer) -> None:
    ca, cert, key = (str(mutual.pki / name) for name in ("ca.pem", "client.pem", "client.key"))
    with Client(mutual.url, cacert=ca, cert=(cert, key)) as client:
        assert (client.acquire(rid("mtls"), "h", 30).fencing_token or 0) >= 1
    run = lease_run(mutual, "--cacert", ca, "--cert", cert, "--key", key)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("token=")


def test_mutual_tls_refuses_no_cert_and_a_foreign_one(mutual: TlsServer, tmp_path: Path) -> None:
    with pytest.raises(httpx.TransportError):
        httpx.get(mutual.url + "/healthz", verify=mutual.context(client_cert=False), timeout=5)
    foreign = make_pki(tmp_path / "foreign", "another CA")
    context = mutual.context(client_cert=False)
    context.load_cert_chain(foreign / "client.pem", foreign / "client.key")
    with pytest.raises(httpx.TransportError):
        httpx.get(mutual.url + "/healthz", verify=context, timeout=5)


SERVER_FILES = ["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/server.key"]


def serve_refused(tmp_path: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "api", "serve", "--port", str(free_port()), *args]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "keys").exists()
    return done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--tls-cert", "{pki}/server.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-cert", "{pki}/none.pem", "--tls-key", "{pki}/server.key"], "--tls-cert: cannot"),
        (["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/none"], "--tls-key: cannot"),
        (
            ["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/client.key"],
            "--tls-cert/--tls-key",
        ),
        (["--tls-client-ca", "{pki}/ca.pem"], "--tls-client-ca needs --tls-cert"),
        (
            [*SERVER_FILES, "--tls-client-ca", "{pki}/server.key"],
            "--tls-client-ca: not a PEM CA",
        ),
    ],
)
def test_bad_tls_options_are_exit_2_naming_the_option(
    tmp_path: Path, args: list[str], said: str
) -> None:
    pki = make_pki(tmp_path.parent / f"{tmp_path.name}-pki")
    stderr = serve_refused(tmp_path, *(arg.format(pki=pki) for arg in args))
    assert said in stderr and "Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--cacert", "{pki}/none.pem"], "--cacert: cannot read"),
        (["--cacert", "{pki}/server.key"], "--cacert: not a PEM CA"),
        (["--cert", "{pki}/client.pem"], "--cert and --key go together"),
        (["--cert", "{pki}/client.pem", "--key", "{pki}/server.key"], "--cert/--key"),
    ],
)
def test_bad_client_tls_options_are_exit_2_naming_the_option(
    tmp_path: Path, args: list[str], said: str
) -> None:
    pki = make_pki(tmp_path / "pki")
    cmd = [sys.executable, "-m", "api", "lease", "run", "r", "--url", "https://127.0.0.1:9"]
    cmd += [*(arg.format(pki=pki) for arg in args), "--", "true"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
