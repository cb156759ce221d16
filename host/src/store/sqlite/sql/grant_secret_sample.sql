SELECT settings FROM batch_grants WHERE has_secret = 1 LIMIT 1;
