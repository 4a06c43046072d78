"""The second stage's live exercises: `grader live`, a state the grade never ran put in front of the candidate's
own code during the follow-up interview (grader/unseen/live.yaml), run in the sandbox or by hand, recorded and
judged by the grade's own engine and criteria. session.py is the command; exercise_run.py makes one run;
hand_box.py is the box for a run the candidate starts by hand."""
