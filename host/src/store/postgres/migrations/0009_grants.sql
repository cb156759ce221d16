-- What an admin granted a batch when opening it: the origins its tasks may reach over
-- HTTP (a JSON list of `SCHEME://HOST[:PORT|:*]`) and the settings they read (a JSON list
-- of {name, value, secret}, a secret's value sealed under the server's secret key). A
-- batch without a row was granted nothing. Deleted with its batch.
CREATE TABLE batch_grants (
    batch_id    BIGINT PRIMARY KEY,
    allow_http  TEXT NOT NULL,
    settings    TEXT NOT NULL,
    has_secret  BOOLEAN NOT NULL
);
CREATE INDEX batch_grants_secret ON batch_grants (batch_id) WHERE has_secret;
