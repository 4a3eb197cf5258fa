-- An instance's bucket of API calls goes with the instance. A grant asked
-- with an instance id a node still held from before the instance's delete
-- wrote the bucket again, a row nothing would remove; a grant now writes
-- only while the instance exists (store.APIRateStore), and the rows of
-- instances already gone are removed here.
DELETE FROM api_rate WHERE instance_id NOT IN (SELECT id FROM instances);
