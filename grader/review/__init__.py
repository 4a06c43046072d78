"""`grader review`: a graded round worked in the browser (the ranking, each candidate's guide beside its scoring
sheet, decisions, live exercises, blind review), served on this machine from the round's own folder."""
