-- An instance's bucket of API calls goes with the instance, however the two
-- race: a node's first grant adds the row (ON CONFLICT DO NOTHING), and a
-- grant asked with an instance id the node still held from before a delete
-- added it after the instance was gone, a row nothing would remove. The
-- foreign key's check locks the instance's row against a delete while the
-- grant's transaction runs, refuses the row of an instance already deleted
-- (the store answers NOT_FOUND), and the cascade removes the row with its
-- instance. Rows of instances already gone are removed first.
DELETE FROM api_rate AS r WHERE NOT EXISTS (SELECT FROM instances AS i WHERE i.id = r.instance_id);
ALTER TABLE api_rate ADD CONSTRAINT api_rate_instance
    FOREIGN KEY (instance_id) REFERENCES instances (id) ON DELETE CASCADE;
