#include "scoring_marks.hpp"

namespace pg_predict::pg {

ScoringMark scoring_marks[kMaxScoringMarks];
int open_scoring_marks = 0;

void scoring_marks_too_deep() {
    elog(ERROR, "pg_predict: more than %d scoring calls nested in one another", kMaxScoringMarks);
}

// Marks are made at non-decreasing nesting levels (a subtransaction started inside a call ends
// before it returns), so the ones to count are on top of the stack.
void count_marked_scoring_errors(int nest_level) {
    while (open_scoring_marks > 0 && scoring_marks[open_scoring_marks - 1].nest_level >= nest_level) {
        const ScoringMark& mark = scoring_marks[--open_scoring_marks];
        if (mark.usage->model_id != mark.model_id) continue;
        mark.usage->counts.errors++;
        usage_pending = true;
    }
}

}  // namespace pg_predict::pg
