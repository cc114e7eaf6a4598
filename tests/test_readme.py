"""The README's promises: the key reference matches the schema, the first commands are right."""
import re
from pathlib import Path

from multispin_sim.scenario import reference_markdown, reference_rows

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")

REGENERATE = ("regenerate the README table: python -c \"import re;from multispin_sim.scenario import "
              "reference_markdown as r;p='README.md';s=open(p).read();open(p,'w').write(re.sub("
              "r'<!-- keys:start -->.*<!-- keys:end -->','<!-- keys:start -->\\n'+r().rstrip()+"
              "'\\n<!-- keys:end -->',s,flags=re.S))\"")


def test_key_reference_is_the_generated_table():
    block = re.search(r"<!-- keys:start -->\n(.*)<!-- keys:end -->", README, re.S)
    assert block, "README lacks the keys:start/keys:end markers"
    assert block.group(1).rstrip() == reference_markdown().rstrip(), REGENERATE


def test_every_key_is_documented():
    for row in reference_rows():
        assert f"`{row[0]}`" in README, row[0]


def test_first_lines_are_the_two_commands():
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert "pip install" in block[0] and "multispin-sim run scenarios/default.yaml" in block[0]
    assert block[1].strip() == "python -m pytest"
