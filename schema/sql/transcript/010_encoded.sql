-- Rows that may hide words in a form not showing their letters (issue 44: a forget missed
-- `%57exbridge` and base64 named "b64"; looking for those forms in every row at forget time
-- cost up to 14x the bare scan). The writer sets `encoded` (wsd.schema.encoded); the rows
-- written before are marked by a broader look (any %, \, &, "64", "atob", "asic "), which only
-- makes a forget read more of them.
ALTER TABLE events ADD COLUMN encoded INTEGER NOT NULL DEFAULT 0 CHECK (encoded IN (0, 1));
ALTER TABLE observations ADD COLUMN encoded INTEGER NOT NULL DEFAULT 0
    CHECK (encoded IN (0, 1));
UPDATE events SET encoded = 1
 WHERE instr(payload, '%') OR instr(payload, '\') OR instr(payload, '&')
    OR payload LIKE '%64%' OR payload LIKE '%atob%' OR payload LIKE '%asic %';
UPDATE observations SET encoded = 1
 WHERE instr(user_message, '%') OR instr(user_message, '\') OR instr(user_message, '&')
    OR user_message LIKE '%64%' OR user_message LIKE '%atob%' OR user_message LIKE '%asic %'
    OR instr(tool_calls_json, '%') OR instr(tool_calls_json, '\')
    OR instr(tool_calls_json, '&') OR tool_calls_json LIKE '%64%'
    OR tool_calls_json LIKE '%atob%' OR tool_calls_json LIKE '%asic %'
    OR instr(agent_response, '%') OR instr(agent_response, '\')
    OR instr(agent_response, '&') OR agent_response LIKE '%64%'
    OR agent_response LIKE '%atob%' OR agent_response LIKE '%asic %';
