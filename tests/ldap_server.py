"""Debian's ``slapd``, started by a test with its own configuration, database and TLS
certificate, seeded with people (scripts/install-auth-providers installs it).

It listens on loopback only, plain LDAP (for STARTTLS) and LDAPS on ports of its own. It is
never skipped: a missing or failing slapd fails the tests that need it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import ldap3
from ldap3.core.exceptions import LDAPException

from tests.servers import die_with_parent, free_port

SLAPD = "/usr/sbin/slapd"
SUFFIX = "dc=example,dc=com"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "directory-admin-secret"
PEOPLE = f"ou=people,{SUFFIX}"
SCHEMAS = ("core", "cosine", "nis", "inetorgperson")
# Active Directory's account attributes (with AD's own OIDs), for entries that carry the
# auxiliary class palaverTestAccount: what an AD entry holds beside inetOrgPerson's.
AD_SCHEMA = """
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 2.16.840.1.113730.3.1.35 NAME 'thumbnailPhoto'
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.55555.1.1 NAME 'palaverTestDisabled'
  EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.55555.2.1 NAME 'palaverTestAccount' AUXILIARY
  MAY ( userAccountControl $ thumbnailPhoto $ palaverTestDisabled ) )
"""


@dataclass(frozen=True)
class Person:
    uid: str
    full_name: str
    email: str
    password: str
    # More attributes of the entry (jpegPhoto, telephoneNumber, userAccountControl...).
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def dn(self) -> str:
        return f"uid={self.uid},{PEOPLE}"


@dataclass
class Directory:
    root: Path
    port: int
    tls_port: int
    certificate: Path

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def settings(self, **overrides: object) -> dict[str, object]:
        """An ``[auth.ldap]`` table for this directory (STARTTLS, searching as the admin)."""
        values: dict[str, object] = {
            "url": self.url,
            "start_tls": True,
            "ca_file": str(self.certificate),
            "bind_dn": ADMIN_DN,
            "bind_password": ADMIN_PASSWORD,
            "user_search_base": PEOPLE,
            "user_filter": "(objectClass=inetOrgPerson)",
            "timeout_seconds": 5,
        }
        values.update(overrides)
        return values

    def _admin(self) -> ldap3.Connection:
        server = ldap3.Server(self.url, get_info=ldap3.NONE)
        return ldap3.Connection(server, ADMIN_DN, ADMIN_PASSWORD, auto_bind=True)

    def add(self, person: Person) -> None:
        with self._admin() as connection:
            ok = connection.add(  # type: ignore[no-untyped-call]
                person.dn,
                ["inetOrgPerson", "palaverTestAccount"],
                {
                    "cn": person.full_name,
                    "sn": person.full_name.split()[-1],
                    "mail": person.email,
                    "userPassword": person.password,
                    **person.extra,
                },
            )
            assert ok, connection.result

    def modify(self, person: Person, **values: object) -> None:
        with self._admin() as connection:
            changes = {name: [(ldap3.MODIFY_REPLACE, [value])] for name, value in values.items()}
            assert connection.modify(person.dn, changes), connection.result  # type: ignore[no-untyped-call]

    def modify_delete(self, person: Person, *names: str) -> None:
        with self._admin() as connection:
            changes: dict[str, list[tuple[str, list[bytes]]]] = {
                name: [(ldap3.MODIFY_DELETE, [])] for name in names
            }
            assert connection.modify(person.dn, changes), connection.result  # type: ignore[no-untyped-call]

    def remove(self, person: Person) -> None:
        with self._admin() as connection:
            assert connection.delete(person.dn), connection.result  # type: ignore[no-untyped-call]


def _certificate(root: Path) -> tuple[Path, Path]:
    cert, key = root / "cert.pem", root / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def _config(root: Path, cert: Path, key: Path) -> Path:
    (root / "ad.schema").write_text(AD_SCHEMA)
    includes = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS)
    includes += f"\ninclude {root}/ad.schema"
    config = root / "slapd.conf"
    config.write_text(
        f"""{includes}
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {root}/slapd.pid
argsfile {root}/slapd.args
TLSCertificateFile {cert}
TLSCertificateKeyFile {key}
database mdb
maxsize 10485760
suffix "{SUFFIX}"
rootdn "{ADMIN_DN}"
rootpw {ADMIN_PASSWORD}
directory {root}/db
"""
    )
    (root / "db").mkdir()
    seed = root / "seed.ldif"
    seed.write_text(
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n"
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n"
    )
    subprocess.run(["/usr/sbin/slapadd", "-f", str(config), "-l", str(seed)], check=True, capture_output=True)
    return config


@contextmanager
def running_directory(root: Path) -> Iterator[Directory]:
    assert Path(SLAPD).exists() and shutil.which("openssl"), (
        "slapd is not installed: run scripts/install-auth-providers (Debian's slapd and ldap-utils)"
    )
    cert, key = _certificate(root)
    config = _config(root, cert, key)
    port, tls_port = free_port(), free_port()
    log = (root / "slapd.log").open("wb")
    process = subprocess.Popen(
        [
            SLAPD,
            "-f",
            str(config),
            "-h",
            f"ldap://127.0.0.1:{port}/ ldaps://127.0.0.1:{tls_port}/",
            "-d",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        # Only what a fork may safely run: one prctl call (as tests/servers.py does).
        preexec_fn=die_with_parent,  # noqa: PLW1509
    )
    directory = Directory(root, port, tls_port, cert)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, f"slapd exited: {(root / 'slapd.log').read_text()[-2000:]}"
            try:
                directory._admin().unbind()
                break
            except LDAPException:
                assert time.monotonic() < deadline, "slapd did not answer within 20 s"
                time.sleep(0.05)
        yield directory
    finally:
        process.terminate()
        process.wait(10)
        log.close()
