"""One way to name a round: `grade-many ROUND --index I` and the Job's explicit list of paths select the same
submission for every index I, whatever the round holds (folders, archives, a folder without submission.yaml);
and a Job whose one pod would read its lone submission as a round is refused where it is written."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from grader_cli import run_grader
from kit_paths import ROOT

from grader.round.many import Entry, ManyError, check_job_order, find_submissions, pick, pod_entries


@pytest.fixture
def round_dir(tmp_path: Path) -> Path:
    """A round as candidates return it: folders, archives, one folder without submission.yaml."""
    folder = tmp_path / "returns"
    shutil.copytree(
        ROOT / "submissions" / "reference",
        folder / "reference",
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"),
    )
    with zipfile.ZipFile(folder / "alice.zip", "w") as archive:
        archive.writestr("submission.yaml", "contract: 1\n")
    (folder / "bob").mkdir()
    (folder / "bob" / "submission.yaml").write_text("contract: 1\n")
    (folder / "carol-forgot-the-yaml").mkdir()
    (folder / "carol-forgot-the-yaml" / "MEMO.md").write_text("# Memo\n")
    return folder


def _job_paths(round_dir: Path, tmp_path: Path) -> list[Path]:
    """The emitted Job's submission paths, as they are found on this machine (the volume is the round folder)."""
    job_file = tmp_path / "job.yaml"
    done = run_grader("grade-many", round_dir, "--emit-k8s-job", job_file)
    assert done.returncode == 0, done.stderr
    args = yaml.safe_load(job_file.read_text())["spec"]["template"]["spec"]["containers"][0]["args"]
    listed = args[args.index("--") + 1 :]
    assert all(a.startswith("/submissions/") for a in listed), listed
    return [round_dir / a.removeprefix("/submissions/") for a in listed]


def test_the_round_folder_and_the_jobs_list_pick_the_same_submission_at_each_index(
    round_dir: Path, tmp_path: Path
) -> None:
    paths = _job_paths(round_dir, tmp_path)
    whole = find_submissions([round_dir])
    assert len(paths) == len(whole) == 4
    for index in range(len(whole)):
        by_folder, by_list = pick(pod_entries([round_dir]), index), pick(pod_entries(paths), index)
        assert (
            (by_folder.name, by_folder.path) == (by_list.name, by_list.path) == (whole[index].name, whole[index].path)
        )
    with pytest.raises(ManyError, match=r"--index 4: out of range; there are 4 submissions \(0\.\.3\)"):
        pick(pod_entries([round_dir]), 4)


def test_the_command_line_grades_the_same_submission_both_ways(round_dir: Path, tmp_path: Path) -> None:
    """`grade-many ROUND --index 2` and the pod's command, graded for real (the manifests' schema only)."""
    paths = _job_paths(round_dir, tmp_path)
    said = []
    for name, arguments in (("folder", [round_dir]), ("list", ["--", *paths])):
        done = run_grader(
            "grade-many", "--out", tmp_path / name, "--index", 2, "--only", "manifests.schema-valid", *arguments
        )
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.split(":")[0])
        assert not (tmp_path / name / "grades.csv").exists()  # a pod's part: report folders only
    assert said == ["carol-forgot-the-yaml", "carol-forgot-the-yaml"], said


def test_a_job_whose_pod_would_read_its_one_submission_as_a_round_is_refused(tmp_path: Path) -> None:
    """The one list a pod expands is a list of one: a lone folder without submission.yaml that holds an archive
    would be graded as a round there, so such a Job is refused when it is written, in one line."""
    dave = tmp_path / "dave"
    dave.mkdir()
    with zipfile.ZipFile(dave / "loadgen.zip", "w") as archive:
        archive.writestr("submission.yaml", "contract: 1\n")
    with pytest.raises(ManyError, match=r"dave: a Job of this one submission would grade what it holds instead"):
        check_job_order([Entry("dave", dave)])
    check_job_order(find_submissions([ROOT / "submissions" / "reference"]))  # a lone submission with its yaml
    (tmp_path / "erin").mkdir()
    (tmp_path / "erin" / "submission.yaml").write_text("contract: 1\n")
    check_job_order([Entry("dave", dave), Entry("erin", tmp_path / "erin")])  # a list: each path is one
