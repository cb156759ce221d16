SELECT settings FROM batch_grants WHERE has_secret LIMIT 1;
