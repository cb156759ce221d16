-- ?1 batch id, ?2 allow_http (JSON [origin]), ?3 settings (JSON [Setting]),
-- ?4 whether a setting is secret
INSERT INTO batch_grants (batch_id, allow_http, settings, has_secret) VALUES (?1, ?2, ?3, ?4);
