"""GRMU (Siavashi and Momtazpour, arXiv 2502.01909): the policy is `policy.Grmu`, registered as "grmu"."""

from origamig.policies.grmu.policy import Grmu

__all__ = ["Grmu"]
