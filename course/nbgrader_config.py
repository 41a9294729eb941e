# nbgrader's configuration for the course. Run every nbgrader command from this folder
# (docs/instructor.md lists them in order). The folders nbgrader uses live here too:
#   source/<assignment>/     made by scripts/make_nbgrader_source.py from lessons/*.md
#   release/ submitted/ autograded/ feedback/ gradebook.db   made by nbgrader
from learning import manifest

c = get_config()  # noqa: F821 (nbgrader provides get_config when it reads this file)

# The same course id as `python -m learning.grade --gradebook`, so both write one gradebook.
c.CourseDirectory.course_id = "kernel-workshop"

# autograde replaces every file of a submission that the source also has with the source's
# copy, except these: the exercise files the learner was asked to edit (the manifest's list).
_course = manifest.load()
c.Autograde.exclude_overwriting = {
    lesson.key: sorted(
        {path for name in lesson.exercises for path in _course.exercise(name).editable}
    )
    for lesson in _course.lessons.values()
    if lesson.exercises
}

# A graded cell re-runs the checker, which starts its own process and, for kernel exercises,
# runs Triton's interpreter on a CPU: allow it the longest exercise time limit of the manifest.
c.Execute.timeout = 600

# Never copy caches into a release or a submission.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*"]
