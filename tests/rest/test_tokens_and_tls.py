"""Hashed tokens (a copy of the tokens file lets no one in) and TLS for `costart serve`,
verified by the client and the CLI against a CA file."""

from __future__ import annotations

import ssl
import subprocess
import sys

import httpx
import pytest
import trustme

from costart.rest.auth import TokenError, Tokens, token_hash
from costart.rest.client import ApiError, Client
from tests.rest.serving import serving

TOKEN = "a-long-random-token-0123456789"


def write(tmp_path, text: str):
    path = tmp_path / "tokens.toml"
    path.write_text(text)
    return path


def test_a_hashed_token_lets_its_holder_in_and_the_hash_itself_does_not(tmp_path):
    digest = token_hash(TOKEN)
    tokens = Tokens.from_toml(write(tmp_path, f'[tokens."{digest}"]\nuser = "alice"\n'))
    assert tokens.user_for_header(f"Bearer {TOKEN}").name == "alice"
    assert tokens.user_for_header(f"Bearer {digest}") is None
    assert tokens.user_for_header(f"Bearer {digest.removeprefix('sha256:')}") is None
    assert tokens.user_for_header(f"Bearer {TOKEN}x") is None


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('[tokens.short]\nuser = "a"\n', "shorter than 16"),
        ('[tokens."sha256:abc"]\nuser = "a"\n', "64 lowercase hex"),
        (f'[tokens.{TOKEN}]\nuser = "a"\nrole = "agent"\n', "needs a non-empty 'nodes'"),
        (f'[tokens.{TOKEN}]\nuser = "a"\nnodes = ["n1"]\n', "only for agent tokens"),
        (f'[tokens.{TOKEN}]\nuser = "a"\nrole = "agent"\nnodes = ["n", "n"]\n', "twice"),
        (f'[tokens.{TOKEN}]\nuser = "a"\nrole = "root"\n', "role"),
        (f'[tokens.{TOKEN}]\nuser = "a"\ncolour = "red"\n', "colour"),
    ],
)
def test_a_bad_tokens_file_is_refused_naming_the_problem(tmp_path, entry, problem):
    with pytest.raises(TokenError, match=problem):
        Tokens.from_toml(write(tmp_path, entry))


def test_an_agent_token_is_bound_to_its_nodes_and_user_is_the_old_name_of_owner(tmp_path):
    text = (
        f'[tokens.{TOKEN}]\nuser = "agent-7"\nrole = "agent"\nnodes = ["n2", "n1"]\n'
        f'[tokens.{TOKEN}-b]\nuser = "alice"\nrole = "user"\n'
    )
    tokens = Tokens.from_toml(write(tmp_path, text))
    agent = tokens.user_for_token(TOKEN)
    assert agent.role == "agent" and agent.nodes == ("n1", "n2")
    assert not agent.may_act_for("agent-7")  # an agent never acts as an owner
    assert tokens.user_for_token(f"{TOKEN}-b").role == "owner"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = tmp / "server.pem", tmp / "server.key", tmp / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    tokens = f'[tokens."{token_hash(TOKEN)}"]\nuser = "alice"\n'
    options = ("--cert", str(cert_file), "--key", str(key_file), "--interval", "0.5")
    options += ("--placement", "tests.rest.fake_placement:factory")
    verify = ssl.create_default_context(cafile=str(ca_file))
    with serving(tmp, tokens, *options, scheme="https", verify=verify) as (url, _, env):
        yield url, ca_file, env


def test_serve_speaks_tls_and_the_client_verifies_it_with_the_ca_file(tls_server):
    url, ca_file, _ = tls_server
    with Client(url, TOKEN, ca_file=ca_file) as verified:
        assert verified.call("GET", "/v1/groups", list) == []
    with (
        Client(url, TOKEN) as unverified,
        pytest.raises(ApiError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        unverified.call("GET", "/v1/groups", list)
    with pytest.raises(httpx.HTTPError):
        httpx.get(url.replace("https", "http") + "/healthz", timeout=5)  # no plain HTTP


def test_the_cli_verifies_the_server_with_ca_file(tls_server):
    url, ca_file, env = tls_server

    def costart(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "costart.cli.main", "--server", url, "--token", TOKEN, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    assert costart("--ca-file", str(ca_file), "get", "groups").returncode == 0
    refused = costart("get", "groups")
    assert refused.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr


def test_serve_refuses_a_cert_without_its_key(tmp_path):
    tokens = write(tmp_path, f'[tokens.{TOKEN}]\nuser = "a"\n')
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "costart.cli.main",
            "serve",
            "--tokens",
            str(tokens),
            "--cert",
            "x.pem",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2 and "--cert and --key go together" in out.stderr
