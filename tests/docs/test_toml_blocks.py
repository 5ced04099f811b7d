"""Every TOML block of the docs is a valid spec (that fits the demo cluster) or a valid
cluster file, unless marked ``<!-- not-a-spec: WHY -->``; the counts are pinned, so a
block that stopped being checked (or a new kind of block) shows."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from costart.bootstrap import Settings, build_placement
from costart.domain import SpecError, parse_spec
from costart.placement import ClusterError, parse_cluster
from tests.docs.blocks import ROOT, Block, all_blocks, blocks_of

DEMO_CLUSTER = ROOT / "scenarios" / "cluster-demo.toml"
# Pinned: (specs, cluster files, marked neither). Change them with the docs, on purpose.
EXPECTED = (3, 2, 2)  # docs/slurm.md: a spec with a slurm table, a cluster file, an owner table


def kind(block: Block) -> str:
    if block.marker == "not-a-spec":
        return "neither"
    document = msgspec.toml.decode(block.text.encode())
    return "cluster" if "levels" in document else "spec"


def check(block: Block) -> None:
    """Raise `SpecError` / `ClusterError` if the block is not what it claims to be."""
    what = kind(block)
    if what == "cluster":
        parse_cluster(block.text)
    elif what == "spec":
        spec = parse_spec(block.text, "toml")
        build_placement(Settings(cluster=DEMO_CLUSTER)).check_feasible(spec)


@pytest.mark.parametrize("block", all_blocks("toml"), ids=lambda b: b.where)
def test_each_toml_block_is_what_it_says(block: Block) -> None:
    if block.marker == "not-a-spec":
        msgspec.toml.decode(block.text.encode())  # still TOML
        return
    check(block)


def test_the_blocks_are_counted() -> None:
    kinds = [kind(b) for b in all_blocks("toml")]
    assert (kinds.count("spec"), kinds.count("cluster"), kinds.count("neither")) == EXPECTED


def test_a_bad_block_is_caught() -> None:
    page = Path("docs/example.md")
    bad = blocks_of(page, '```toml\nname = "x"\nowner = "a"\nmembers = []\n```\n')
    with pytest.raises(SpecError, match="members: a group needs at least one member"):
        check(bad[0])
    cluster = blocks_of(page, '```toml\nlevels = ["rack"]\n[[nodes]]\nname = "n"\npath = []\n```\n')
    with pytest.raises(ClusterError):
        check(cluster[0])
    marked = blocks_of(page, '<!-- not-a-spec: tokens -->\n```toml\n[tokens.x]\nuser = "a"\n```\n')
    assert kind(marked[0]) == "neither"


def test_a_marker_must_sit_on_a_fence() -> None:
    with pytest.raises(ValueError, match="right before a fence"):
        blocks_of(Path("docs/x.md"), "<!-- not-run: no -->\n\n```sh\ntrue\n```\n")
