"""What Galaxy and the docsite show: absolute README links, the licence, the guides, the changelog.

Galaxy renders README.md on the collection's page, away from the repository: a relative link
breaks there, so every link is absolute, into galaxy.yml's repository. The tarball's contents
are checked where it is built (tests/tools/galaxy_build_install.sh); the import itself and the
docsite build run in tests/tools/galaxy_importer.sh and tests/tools/docs_check.sh.
"""
import re
from pathlib import Path

import yaml

from tests.support import paths

REPO = Path(paths.REPO)
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_links_are_absolute_into_the_repository():
    links = LINK.findall((REPO / "README.md").read_text())
    assert links
    relative = [t for t in links if not re.match(r"https?://|#", t)]
    assert not relative, "make these absolute (%s/blob/main/PATH): %s" % (GALAXY["repository"], relative)
    for target in links:
        prefix = GALAXY["repository"] + "/"
        if target.startswith(prefix):
            kind, branch, path = target[len(prefix):].split("/", 2)
            assert (kind, branch) in {("blob", "main"), ("tree", "main")}, target
            assert (REPO / path.split("#")[0]).exists(), "README links to a missing file: %s" % target


def test_the_licence_galaxy_names_is_shipped():
    assert GALAXY["license"] == ["GPL-3.0-or-later"]
    text = (REPO / "COPYING").read_text()
    assert text.split("\n", 3)[:2] == ["                    GNU GENERAL PUBLIC LICENSE",
                                       "                       Version 3, 29 June 2007"]


def test_the_docsite_links_every_guide():
    guides = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    extra = yaml.safe_load((REPO / "docs" / "docsite" / "extra-docs.yml").read_text())
    pages = [page for section in extra["sections"] for page in section["toctree"]]
    linked = []
    for page in pages:
        linked += re.findall(r"<%s/blob/main/docs/([^>]+\.md)>" % re.escape(GALAXY["repository"]),
                             (REPO / "docs" / "docsite" / "rst" / ("%s.rst" % page)).read_text())
    assert sorted(linked) == guides
    links = yaml.safe_load((REPO / "docs" / "docsite" / "links.yml").read_text())
    assert "https://github.com/%s" % links["edit_on_github"]["repository"] == GALAXY["repository"]


def test_the_release_of_galaxy_yml_is_in_the_changelog():
    changes = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())
    assert GALAXY["version"] in changes["releases"], "run: antsibull-changelog release (the version of galaxy.yml)"
    assert "v%s\n" % GALAXY["version"] in (REPO / "CHANGELOG.rst").read_text()
