"""Bearer tokens and who may act for whom, directly (the REST contract tests reach them
only through a server process)."""

from __future__ import annotations

import pytest

from costart.rest.auth import TokenError, Tokens, User

ALICE = "alice-token-0123"  # exactly 16 characters: the shortest token allowed
ROOT = "root-token-0123456789"


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
