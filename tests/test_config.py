"""Settings: defaults < TOML file < environment < overrides, derived values, and errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from palaver.config import ConfigError, RateLimit, Settings, load_settings


def write_toml(tmp_path: Path, text: str, name: str = "palaver.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def config_error(**kwargs: Any) -> str:
    """The message of the ConfigError that loading with these arguments raises."""
    kwargs.setdefault("env", {})
    with pytest.raises(ConfigError) as info:
        load_settings(**kwargs)
    message = str(info.value)
    assert message and "\n" not in message, repr(message)
    assert "Traceback" not in message
    return message


# Defaults and derived values -------------------------------------------------------------


def test_defaults() -> None:
    s = load_settings(env={})
    assert s.host == "127.0.0.1"
    assert s.port == 9991
    assert s.workers == 1
    assert s.data_dir == Path("palaver-data")
    assert s.redis_url is None
    assert s.push_relay_url is None
    assert s.log_level == "info"
    assert s.root_realm_string_id == ""
    assert s.create_demo_realm is True
    assert s.rate_limiting is True
    assert s.api_rate_limit == RateLimit(count=200, seconds=60)
    assert s.auth_rate_limit_per_username == RateLimit(count=5, seconds=1800)
    assert s.auth_rate_limit_per_ip == RateLimit(count=50, seconds=600)


def test_derived_defaults_follow_data_dir(tmp_path: Path) -> None:
    s = load_settings(env={}, data_dir=tmp_path)
    assert s.database_url == f"sqlite:///{tmp_path / 'palaver.db'}"
    # An absolute path gives SQLAlchemy's four-slash form.
    assert s.database_url.startswith("sqlite:////")
    assert s.is_sqlite
    assert s.upload_dir == tmp_path / "uploads"

    relative = load_settings(env={})
    assert relative.database_url == "sqlite:///palaver-data/palaver.db"
    assert relative.upload_dir == Path("palaver-data/uploads")


def test_explicit_values_beat_derived_ones(tmp_path: Path) -> None:
    s = load_settings(
        env={},
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{tmp_path / 'other.db'}",
        upload_dir=tmp_path / "files",
        external_url="https://chat.example.com/",
    )
    assert s.database_url == f"sqlite:///{tmp_path / 'other.db'}"
    assert s.upload_dir == tmp_path / "files"
    assert s.external_url == "https://chat.example.com"


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("127.0.0.1", 9991, "http://127.0.0.1:9991"),
        ("chat.internal", 8080, "http://chat.internal:8080"),
        # A wildcard bind is not an address a client can use.
        ("0.0.0.0", 80, "http://localhost:80"),
        ("::", 9991, "http://localhost:9991"),
        ("::1", 9991, "http://[::1]:9991"),
    ],
)
def test_external_url_derived_from_host_and_port(host: str, port: int, expected: str) -> None:
    s = load_settings(env={}, host=host, port=port)
    assert s.external_url == expected
    assert s.external_scheme == "http"


def test_external_host_and_scheme() -> None:
    s = load_settings(env={}, external_url="https://Chat.Example.com:8443")
    assert s.external_host == "chat.example.com:8443"
    assert s.external_scheme == "https"


def test_settings_are_frozen() -> None:
    s = load_settings(env={})
    with pytest.raises(ValidationError):
        s.port = 1  # type: ignore[misc]


def test_settings_survive_json_round_trip(tmp_path: Path) -> None:
    # `serve --workers N` hands settings to worker processes as JSON.
    s = load_settings(
        env={},
        data_dir=tmp_path,
        database_url="postgres://u@db.internal/palaver",
        redis_url="redis://127.0.0.1:6379/0",
        api_rate_limit="10/5",
        log_level="WARNING",
    )
    assert Settings.model_validate_json(s.model_dump_json()) == s


def test_worker_app_reads_settings_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from palaver.asgi import create_app_from_environment

    s = load_settings(env={}, data_dir=tmp_path, port=12345, log_level="warning")
    monkeypatch.setenv("PALAVER_SETTINGS_JSON", s.model_dump_json())
    app = create_app_from_environment()
    try:
        assert app.state.services.settings == s
    finally:
        app.state.services.close()


# Layers ----------------------------------------------------------------------------------


def test_toml_file_top_level(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'port = 8000\nhost = "0.0.0.0"\napi_rate_limit = "30/10"\n')
    s = load_settings(env={}, config_file=path)
    assert s.port == 8000
    assert s.host == "0.0.0.0"
    assert s.api_rate_limit == RateLimit(count=30, seconds=10)
    assert s.external_url == "http://localhost:8000"


def test_toml_file_palaver_table(tmp_path: Path) -> None:
    # Other tools' tables may share the file; only [palaver] is read.
    path = write_toml(
        tmp_path,
        '[other_tool]\nanything = "goes"\n\n[palaver]\nport = 8001\nlog_level = "debug"\n'
        "api_rate_limit = { count = 7, seconds = 3 }\n",
    )
    s = load_settings(env={}, config_file=path)
    assert s.port == 8001
    assert s.log_level == "debug"
    assert s.api_rate_limit == RateLimit(count=7, seconds=3)


def test_toml_file_from_environment_variable(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "port = 8002\n")
    assert load_settings(env={"PALAVER_CONFIG": str(path)}).port == 8002


def test_explicit_config_file_beats_environment_variable(tmp_path: Path) -> None:
    from_env = write_toml(tmp_path, "port = 8003\n", "env.toml")
    explicit = write_toml(tmp_path, "port = 8004\n", "explicit.toml")
    s = load_settings(env={"PALAVER_CONFIG": str(from_env)}, config_file=explicit)
    assert s.port == 8004


def test_precedence_defaults_file_environment_overrides(tmp_path: Path) -> None:
    path = write_toml(
        tmp_path,
        'host = "10.0.0.1"\nport = 8100\nworkers = 2\nlog_level = "error"\n',
    )
    env = {"PALAVER_PORT": "8200", "PALAVER_WORKERS": "3"}
    s = load_settings(env=env, config_file=path, workers=4)
    assert s.host == "10.0.0.1"  # file beats default
    assert s.port == 8200  # environment beats file
    assert s.workers == 4  # override beats environment
    assert s.log_level == "error"  # file, untouched by later layers
    assert s.max_file_upload_size_mib == 25  # default


def test_none_overrides_are_ignored() -> None:
    # The CLI passes every option, None when the flag was not given.
    s = load_settings(env={"PALAVER_PORT": "8300"}, port=None, host=None)
    assert s.port == 8300
    assert s.host == "127.0.0.1"


def test_environment_values_are_parsed() -> None:
    s = load_settings(
        env={
            "PALAVER_DATA_DIR": "/srv/palaver",
            "PALAVER_PORT": "8400",
            "PALAVER_CREATE_DEMO_REALM": "false",
            "PALAVER_RATE_LIMITING": "0",
            "PALAVER_AUTH_RATE_LIMIT_PER_IP": "9/30",
            "PALAVER_ROOT_REALM_STRING_ID": "main",
            "UNRELATED": "ignored",
        }
    )
    assert s.data_dir == Path("/srv/palaver")
    assert s.database_url == "sqlite:////srv/palaver/palaver.db"
    assert s.port == 8400
    assert s.create_demo_realm is False
    assert s.rate_limiting is False
    assert s.auth_rate_limit_per_ip == RateLimit(count=9, seconds=30)
    assert s.root_realm_string_id == "main"


def test_unprefixed_database_and_redis_urls() -> None:
    s = load_settings(env={"DATABASE_URL": "postgres://u@h/db", "REDIS_URL": "redis://127.0.0.1:6379"})
    assert s.database_url == "postgresql+psycopg://u@h/db"
    assert s.redis_url == "redis://127.0.0.1:6379"


def test_prefixed_variables_beat_unprefixed() -> None:
    s = load_settings(
        env={
            "DATABASE_URL": "postgresql://u@platform/db",
            "PALAVER_DATABASE_URL": "postgresql://u@mine/db",
            "REDIS_URL": "redis://platform",
            "PALAVER_REDIS_URL": "redis://mine",
        }
    )
    assert s.database_url == "postgresql+psycopg://u@mine/db"
    assert s.redis_url == "redis://mine"


def test_unprefixed_environment_beats_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'database_url = "postgresql://u@file/db"\n')
    s = load_settings(env={"DATABASE_URL": "postgresql://u@env/db"}, config_file=path)
    assert s.database_url == "postgresql+psycopg://u@env/db"


def test_empty_environment_variables_count_as_unset(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "port = 8500\n")
    s = load_settings(
        env={
            "PALAVER_PORT": "",
            "PALAVER_DATA_DIR": "",
            "PALAVER_PUSH_RELAY_URL": "",
            "PALAVER_REDIS_URL": "",
            "DATABASE_URL": "",
        },
        config_file=path,
    )
    assert s.port == 8500
    assert s.data_dir == Path("palaver-data")
    assert s.push_relay_url is None
    assert s.redis_url is None
    assert s.database_url == "sqlite:///palaver-data/palaver.db"


def test_empty_push_relay_url_in_file_means_unset(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'push_relay_url = ""\n')
    assert load_settings(env={}, config_file=path).push_relay_url is None


def test_log_level_is_case_insensitive() -> None:
    assert load_settings(env={"PALAVER_LOG_LEVEL": "WARNING"}).log_level == "warning"


# Parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count", "seconds"),
    [("200/60", 200, 60), ("1/1", 1, 1), (" 10 / 5 ", 10, 5)],
)
def test_rate_limit_parsing(text: str, count: int, seconds: int) -> None:
    s = load_settings(env={}, api_rate_limit=text)
    assert s.api_rate_limit == RateLimit(count=count, seconds=seconds)


def test_rate_limit_as_mapping() -> None:
    s = load_settings(env={}, auth_rate_limit_per_username={"count": 3, "seconds": 900})
    assert s.auth_rate_limit_per_username == RateLimit(count=3, seconds=900)


@pytest.mark.parametrize("text", ["200", "200/", "/60", "a/b", "0/60", "10/0", "-1/5", "1.5/2", "1/2/3"])
def test_bad_rate_limits(text: str) -> None:
    message = config_error(api_rate_limit=text)
    assert message.startswith("invalid setting api_rate_limit"), message


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("postgres://u:pw@db.internal:5432/palaver", "postgresql+psycopg://u:pw@db.internal:5432/palaver"),
        ("postgresql://u@db.internal/palaver", "postgresql+psycopg://u@db.internal/palaver"),
        ("postgresql+psycopg://u@db.internal/palaver", "postgresql+psycopg://u@db.internal/palaver"),
        ("POSTGRES://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql:///palaver?host=/run/postgresql", "postgresql+psycopg:///palaver?host=/run/postgresql"),
        ("sqlite:///relative.db", "sqlite:///relative.db"),
        ("sqlite:////abs/palaver.db", "sqlite:////abs/palaver.db"),
        ("sqlite+pysqlite:////abs/palaver.db", "sqlite:////abs/palaver.db"),
    ],
)
def test_database_url_normalisation(given: str, stored: str) -> None:
    assert load_settings(env={}, database_url=given).database_url == stored


# Errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["abc", "70000", "-1", "9991.5"])
def test_bad_port(port: str) -> None:
    message = config_error(env={"PALAVER_PORT": port})
    # The message says which setting and where it came from.
    assert message.startswith("invalid setting port (from PALAVER_PORT): "), message


@pytest.mark.parametrize(
    "url",
    [
        "mysql://u@h/db",
        "postgresql+asyncpg://u@h/db",
        "postgresql+psycopg2://u@h/db",
        "not a url",
        "palaver.db",
        "sqlite://",
        "sqlite:///:memory:",
        "postgresql://",
    ],
)
def test_bad_database_url(url: str) -> None:
    message = config_error(database_url=url)
    assert message.startswith("invalid setting database_url"), message


def test_bad_database_url_names_the_variable() -> None:
    message = config_error(env={"DATABASE_URL": "mysql://u@h/db"})
    assert "(from DATABASE_URL)" in message


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "127.0.0.1:6379"])
def test_bad_redis_url(url: str) -> None:
    assert config_error(redis_url=url).startswith("invalid setting redis_url")


@pytest.mark.parametrize(
    "url", ["ftp://chat.example.com", "chat.example.com", "http://", "http://h:port", "https://h/chat"]
)
def test_bad_external_url(url: str) -> None:
    assert config_error(external_url=url).startswith("invalid setting external_url")


def test_bad_push_relay_url() -> None:
    assert config_error(push_relay_url="relay.example.com").startswith("invalid setting push_relay_url")


@pytest.mark.parametrize("level", ["verbose", "warn", "10"])
def test_bad_log_level(level: str) -> None:
    message = config_error(env={"PALAVER_LOG_LEVEL": level})
    assert message.startswith("invalid setting log_level (from PALAVER_LOG_LEVEL)"), message


@pytest.mark.parametrize(
    ("name", "value"), [("workers", 0), ("workers", 65), ("password_memory_cost_kib", 4)]
)
def test_out_of_range_numbers(name: str, value: int) -> None:
    assert config_error(**{name: value}).startswith(f"invalid setting {name}")


def test_bad_toml(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "port = \n[palaver\n")
    message = config_error(config_file=path)
    assert message.startswith(f"configuration file {path} is not valid TOML"), message


def test_toml_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('host = "caf\u00e9"\n'.encode("latin-1"))
    assert "is not valid TOML" in config_error(config_file=path)


def test_missing_config_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    assert config_error(config_file=path) == f"configuration file {path} does not exist"
    # Named through the environment, too.
    assert config_error(env={"PALAVER_CONFIG": str(path)}) == f"configuration file {path} does not exist"


def test_config_file_that_is_a_directory(tmp_path: Path) -> None:
    assert config_error(config_file=tmp_path).startswith(f"configuration file {tmp_path} cannot be read")


def test_palaver_entry_must_be_a_table(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "palaver = 5\n")
    assert config_error(config_file=path) == f"configuration file {path}: [palaver] must be a table"


def test_unknown_key_in_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[palaver]\nport = 8000\nprot = 8001\n")
    assert config_error(config_file=path) == f"configuration file {path}: unknown setting 'prot'"


def test_unknown_top_level_key_in_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'database = "x"\n')
    assert config_error(config_file=path) == f"configuration file {path}: unknown setting 'database'"


def test_unknown_override() -> None:
    assert config_error(prot=8000) == "unknown setting 'prot'"


def test_bad_value_in_file_names_the_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'port = "high"\n')
    message = config_error(config_file=path)
    assert message.startswith(f"invalid setting port (from configuration file {path}): "), message


def test_error_messages_stay_on_one_line(tmp_path: Path) -> None:
    # config_error() checks there is no line break, even when the input holds one.
    assert "does not exist" in config_error(config_file=tmp_path / "two\nlines.toml")
    assert config_error(env={"PALAVER_HOST": "x", "PALAVER_PORT": "1\n2"}).startswith("invalid setting port")
    assert str(ConfigError("first\nsecond")) == "first second"


def test_unprefixed_variables_are_not_settings() -> None:
    # Only DATABASE_URL and REDIS_URL are read without the prefix.
    s = load_settings(env={"PORT": "1234", "HOST": "0.0.0.0", "LOG_LEVEL": "debug"})
    assert (s.port, s.host, s.log_level) == (9991, "127.0.0.1", "info")


def test_read_replica_url_from_the_environment() -> None:
    settings = load_settings(
        env={
            "PALAVER_DATABASE_URL": "postgres://db-primary/palaver",
            "PALAVER_DATABASE_REPLICA_URL": "postgresql://db-replica/palaver",
            "PALAVER_DATABASE_REPLICA_FENCE_SECONDS": "2.5",
        }
    )
    assert settings.database_replica_url == "postgresql+psycopg://db-replica/palaver"
    assert settings.database_replica_fence_seconds == 2.5
    assert load_settings(env={}).database_replica_url is None


@pytest.mark.parametrize(
    ("primary", "replica", "message"),
    [
        ("", "postgresql://db-replica/palaver", "needs a PostgreSQL database_url"),
        ("sqlite:///x.db", "postgresql://db-replica/palaver", "needs a PostgreSQL database_url"),
        ("postgresql://db/palaver", "sqlite:///copy.db", "replicas are PostgreSQL's"),
        ("postgresql://db/palaver", "mysql://db/palaver", "must be a sqlite:///PATH or postgresql"),
    ],
)
def test_a_read_replica_needs_postgresql_on_both_sides(primary: str, replica: str, message: str) -> None:
    env = {"PALAVER_DATABASE_REPLICA_URL": replica}
    if primary:
        env["PALAVER_DATABASE_URL"] = primary
    with pytest.raises(ConfigError, match=message):
        load_settings(env=env)


# Sign-in providers: the [auth.…] tables ----------------------------------------------------


def test_auth_tables_with_secrets_by_file_and_environment(tmp_path: Path) -> None:
    secret = tmp_path / "oidc-secret"
    secret.write_text("from-a-file\n")
    config = tmp_path / "palaver.toml"
    config.write_text(
        f"""
[auth.ldap]
url = "ldaps://ldap.example.com"
user_search_base = "ou=people,dc=example,dc=com"
bind_dn = "cn=palaver,dc=example,dc=com"
bind_password_env = "LDAP_PW"

[auth.oidc.keycloak]
display_name = "Company SSO"
issuer = "https://sso.example.com/realms/corp"
client_id = "palaver"
client_secret_file = "{secret}"

[auth.github]
client_id = "gh-id"
client_secret = "gh-secret"
"""
    )
    settings = load_settings(env={"LDAP_PW": "from-the-env"}, config_file=config)
    assert settings.auth.ldap is not None and settings.auth.ldap.bind_password == "from-the-env"
    assert settings.auth.ldap.uses_tls
    keycloak = settings.auth.oidc["keycloak"]
    assert (keycloak.client_secret, keycloak.button_name, keycloak.path) == (
        "from-a-file",
        "oidc:keycloak",
        "oidc/keycloak",
    )
    assert settings.auth.github is not None and settings.auth.github.display_name == "GitHub"
    assert [p.name for p in settings.auth.providers()] == ["keycloak", "github"]
    # Worker processes get the settings as JSON: the secrets travel resolved.
    again = Settings.model_validate_json(settings.model_dump_json())
    assert again.auth == settings.auth


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[auth.ldap]\nurl = "http://x"\nuser_search_base = "o=x"', "must be an ldap:// or ldaps:// URL"),
        (
            '[auth.ldap]\nurl = "ldap://x"\nuser_search_base = "o=x"\nbind_password_env = "NOPE"',
            "NOPE is not set",
        ),
        (
            '[auth.ldap]\nurl = "ldaps://x"\nuser_search_base = "o=x"\nstart_tls = true',
            "start_tls is for ldap://",
        ),
        ('[auth.oidc.corp]\nclient_id = "x"', "issuer is required"),
        ('[auth.oidc."Bad Name"]\nclient_id = "x"\nissuer = "https://x"', "use lowercase letters"),
        (
            '[auth.oidc.corp]\nclient_id = "x"\nissuer = "https://x"\nclient_secret_file = "/nonexistent"',
            "cannot be read",
        ),
        ('[auth.saml.corp]\nsp_key_file = "/etc/hostname"\nsp_cert_file = "/etc/hostname"', "give one of"),
        (
            '[auth.saml.corp]\nidp_metadata_url = "https://idp"\nsp_key_file = "/nonexistent"\n'
            'sp_cert_file = "/etc/hostname"',
            "/nonexistent cannot be read",
        ),
        (
            '[auth.saml.corp]\nidp_metadata_url = "ftp://idp"\nsp_key_file = "/etc/hostname"\n'
            'sp_cert_file = "/etc/hostname"',
            "http:// or https://",
        ),
    ],
)
def test_bad_auth_tables_are_configuration_errors(tmp_path: Path, table: str, message: str) -> None:
    config = tmp_path / "palaver.toml"
    config.write_text(table + "\n")
    with pytest.raises(ConfigError, match=message):
        load_settings(env={}, config_file=config)
