"""Write any family's tiny random checkpoint (the reserved ``lookcloser/<size>-<family>`` models) to a folder.

    python -m agent.tiny_models OUT_DIR --family gemma3 [--size tiny] [--seed 0]

Offline and deterministic from the seed, as the reserved names build them (``agent/families``).
"""

from __future__ import annotations

import argparse

from lookcloser.agent.families import FAMILIES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--family", required=True, choices=sorted(FAMILIES))
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    family = FAMILIES[args.family]
    if args.size not in family.sizes:
        parser.error(f"--size: {args.family} has the sizes {', '.join(family.sizes)}, not {args.size!r}")
    print(family.build_tiny(args.out_dir, seed=args.seed, size=args.size))


if __name__ == "__main__":
    main()
