"""Fill a PDF form (an example file of the pdf-processing skill; not run by the server)."""

import json
import sys


def main() -> None:
    form, values, out = sys.argv[1:4]
    with open(values, encoding="utf-8") as f:
        fields = json.load(f)
    print(f"would fill {form} with {sorted(fields)} into {out}")


if __name__ == "__main__":
    main()
