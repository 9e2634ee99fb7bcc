"""A ROS_DOMAIN_ID is held by one r2s2r run on the host at a time (tests, soaks and studies share it)."""

from __future__ import annotations

import pytest
from r2s2r_sim.ros.dds import DOMAIN_IDS, claim_domain


def test_a_held_domain_is_refused_with_its_lock_file_and_free_again_after_release() -> None:
    first = claim_domain()
    assert first.domain in DOMAIN_IDS
    with pytest.raises(ValueError, match=rf"ROS_DOMAIN_ID {first.domain} is in use .*{first.domain}\.lock"):
        claim_domain(first.domain)
    other = claim_domain()  # any free one is another id
    assert other.domain != first.domain
    first.release()
    again = claim_domain(first.domain)
    assert again.domain == first.domain
    again.release()
    other.release()


@pytest.mark.parametrize("domain", [0, 102, -1])
def test_a_domain_outside_the_usable_range_is_refused(domain: int) -> None:
    with pytest.raises(ValueError, match=f"ROS_DOMAIN_ID {domain}: outside 1..101"):
        claim_domain(domain)
