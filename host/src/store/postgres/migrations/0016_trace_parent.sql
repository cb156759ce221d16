-- The trace context a task was submitted in (W3C `traceparent`), kept while traces are
-- on so that its attempts join the submission's trace, on whichever node runs them.
-- NULL when traces were off: nothing is stored then.
ALTER TABLE tasks ADD COLUMN trace_parent text;
