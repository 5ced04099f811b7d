"""Bearer tokens and who may act for whom, directly (the REST contract tests reach them
only through a server process)."""

from __future__ import annotations

import base64
import re

import pytest

from costart.rest.auth import TokenError, Tokens, User, new_token, token_hash

ALICE = "alice-token-0123"  # exactly 16 characters: the shortest token allowed
ROOT = "root-token-0123456789"
AGENT = "agent-token-0123456789"


@pytest.fixture
def tokens(tmp_path):
    path = tmp_path / "tokens.toml"
    path.write_text(
        f'[tokens.{ALICE}]\nuser = "alice"\n[tokens.{ROOT}]\nuser = "root"\nrole = "admin"\n'
    )
    return Tokens.from_toml(path)


@pytest.mark.parametrize(
    ("header", "user"),
    [
        (f"Bearer {ALICE}", "alice"),
        (f"bearer {ALICE}", "alice"),
        (f"BEARER   {ROOT}  ", "root"),
        (f"Bearer {ALICE}x", None),
        (f"Bearer {ALICE[:-1]}", None),
        (f"Basic {ALICE}", None),
        (ALICE, None),
        ("Bearer ", None),
        ("", None),
        (None, None),
    ],
)
def test_a_header_names_a_user_only_with_a_known_bearer_token(tokens, header, user):
    found = tokens.user_for_header(header)
    assert (found.name if found else None) == user


def test_roles_default_to_owner_and_only_admins_act_for_others(tokens):
    alice = tokens.user_for_header(f"Bearer {ALICE}")
    root = tokens.user_for_header(f"Bearer {ROOT}")
    assert alice == User("alice", "owner") and not alice.is_admin
    assert root == User("root", "admin") and root.is_admin
    assert alice.may_act_for("alice") and not alice.may_act_for("bob")
    assert root.may_act_for("bob") and root.may_act_for("root")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[tokens.short-token-0123]\nuser = "x"\n', None),
        ('[tokens.short-token-012]\nuser = "x"\n', "shorter than 16"),
        (f'[tokens.{ALICE}]\nuser = "x"\nrole = "superuser"\n', "role"),
        (f'[tokens.{ALICE}]\nuser = "x"\ncolour = "red"\n', "colour"),
        (f"[tokens.{ALICE}]\n", "user"),
        ("tokens = [", "tokens file"),
    ],
)
def test_a_bad_tokens_file_is_refused_naming_the_problem(tmp_path, text, problem):
    path = tmp_path / "tokens.toml"
    path.write_text(text)
    if problem is None:
        assert Tokens.from_toml(path).user_for_header("Bearer short-token-0123") is not None
        return
    with pytest.raises(TokenError, match=problem):
        Tokens.from_toml(path)


def test_a_missing_tokens_file_is_refused_naming_it(tmp_path):
    with pytest.raises(TokenError, match=r"nope\.toml"):
        Tokens.from_toml(tmp_path / "nope.toml")


def test_an_empty_tokens_file_admits_nobody(tmp_path):
    path = tmp_path / "tokens.toml"
    path.write_text("")
    assert Tokens.from_toml(path).user_for_header(f"Bearer {ALICE}") is None


def _file(tmp_path, text):
    path = tmp_path / "tokens.toml"
    path.write_text(text)
    return path


def test_the_legacy_role_user_is_an_owner(tmp_path):
    path = _file(tmp_path, f'[tokens.{ALICE}]\nuser = "alice"\nrole = "user"\n')
    assert Tokens.from_toml(path).user_for_token(ALICE) == User("alice", "owner")


def test_an_agent_token_names_its_nodes_sorted(tmp_path):
    path = _file(
        tmp_path, f'[tokens.{ALICE}]\nuser = "rack-7"\nrole = "agent"\nnodes = ["n2", "n1"]\n'
    )
    assert Tokens.from_toml(path).user_for_token(ALICE) == User("rack-7", "agent", ("n1", "n2"))


def test_a_claims_token_without_nodes_is_a_claim_driver(tmp_path):
    path = _file(tmp_path, f'[tokens.{ALICE}]\nuser = "driver"\nrole = "claims"\n')
    assert Tokens.from_toml(path).user_for_token(ALICE) == User("driver", "claims")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('role = "agent"', "an agent token needs a non-empty 'nodes' list"),
        ('role = "agent"\nnodes = []', "an agent token needs a non-empty 'nodes' list"),
        ('nodes = ["n1"]', "'nodes' is only for agent tokens (role is 'owner')"),
        ('role = "user"\nnodes = ["n1"]', "'nodes' is only for agent tokens (role is 'owner')"),
        ('role = "admin"\nnodes = ["n1"]', "'nodes' is only for agent tokens (role is 'admin')"),
        ('role = "agent"\nnodes = ["n1", "n2", "n1"]', "'nodes' lists a node twice"),
    ],
    ids=[
        "agent-no-nodes",
        "agent-empty-nodes",
        "owner-nodes",
        "user-nodes",
        "admin-nodes",
        "twice",
    ],
)
def test_a_token_entry_that_contradicts_its_role_is_refused_word_for_word(tmp_path, entry, problem):
    path = _file(tmp_path, f'[tokens.{ALICE}]\nuser = "x"\n{entry}\n')
    with pytest.raises(TokenError) as caught:
        Tokens.from_toml(path)
    assert str(caught.value) == f"tokens file {path}: token of 'x': {problem}"


def test_a_short_raw_token_is_refused_word_for_word(tmp_path):
    path = _file(tmp_path, '[tokens.short-token-012]\nuser = "x"\n')
    with pytest.raises(TokenError) as caught:
        Tokens.from_toml(path)
    assert str(caught.value) == f"tokens file {path}: token of 'x' is shorter than 16 characters"


def test_an_unreadable_or_invalid_file_names_itself(tmp_path):
    path = _file(tmp_path, f'[tokens.{ALICE}]\nuser = "x"\ncolour = "red"\n')
    with pytest.raises(TokenError) as caught:
        Tokens.from_toml(path)
    message = str(caught.value)
    assert message.startswith(f"tokens file {path}: ") and "colour" in message
    path.write_text("tokens = [")
    with pytest.raises(TokenError) as caught:
        Tokens.from_toml(path)
    message = str(caught.value)
    assert message.startswith(f"tokens file {path}: ") and "Invalid value" in message


def test_a_hashed_key_admits_its_token_and_never_the_hash_itself(tmp_path):
    path = _file(
        tmp_path,
        f'[tokens."{token_hash(ALICE)}"]\nuser = "alice"\n'
        f'[tokens."{token_hash(ROOT)}"]\nuser = "root"\nrole = "admin"\n'
        f'[tokens.{AGENT}]\nuser = "rack-7"\nrole = "agent"\nnodes = ["n1"]\n',
    )
    tokens = Tokens.from_toml(path)
    assert tokens.user_for_token(ALICE) == User("alice", "owner")
    assert tokens.user_for_header(f"Bearer {ROOT}") == User("root", "admin")
    assert tokens.user_for_token(AGENT) == User("rack-7", "agent", ("n1",))
    assert tokens.user_for_token(token_hash(ALICE)) is None
    assert tokens.user_for_token(token_hash(ALICE).removeprefix("sha256:")) is None
    assert tokens.user_for_token(ALICE + "x") is None


@pytest.mark.parametrize(
    "digest",
    [
        token_hash(ALICE).removeprefix("sha256:")[:-1],
        token_hash(ALICE).removeprefix("sha256:") + "0",
        token_hash(ALICE).removeprefix("sha256:").upper(),
        "X" * 64,
        "g" * 64,
        "",
    ],
    ids=["63-digits", "65-digits", "upper-case", "x", "not-hex", "empty"],
)
def test_a_hashed_key_is_sha256_and_64_lowercase_hex_digits(tmp_path, digest):
    path = _file(tmp_path, f'[tokens."sha256:{digest}"]\nuser = "x"\n')
    with pytest.raises(TokenError) as caught:
        Tokens.from_toml(path)
    assert str(caught.value) == (
        f"tokens file {path}: token of 'x': a hashed key is 'sha256:' and 64 lowercase hex digits"
    )


def test_tokens_built_directly_find_each_user_by_raw_token_or_hash():
    alice, root, bob = User("alice", "owner"), User("root", "admin"), User("bob", "owner")
    assert Tokens({ALICE: alice, ROOT: root}).user_for_token(ROOT) == root
    assert Tokens({ALICE: alice, ROOT: root}).user_for_token(ALICE) == alice
    assert Tokens({ALICE: alice}).user_for_token(ROOT) is None
    both = Tokens({ALICE: alice}, {token_hash(ROOT): root, token_hash(AGENT): bob})
    assert both.user_for_token(ROOT) == root
    assert both.user_for_token(AGENT) == bob
    assert both.user_for_token(ALICE) == alice
    assert both.user_for_token("another-token-0123") is None


def test_a_token_hash_is_the_tokens_sha256_in_lowercase_hex():
    assert token_hash("abc") == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_a_new_token_is_32_random_bytes_url_safe():
    first, second = new_token(), new_token()
    assert first != second
    assert len(first) == 43 and re.fullmatch(r"[A-Za-z0-9_-]{43}", first)
    assert len(base64.urlsafe_b64decode(first + "=")) == 32
