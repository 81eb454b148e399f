-- Every MariaDB/MySQL column type with NULLs, extremes, unicode and empty strings.
-- Used by the load and CDC integration tests (database given by the test).
CREATE TABLE zoo (
  id INT NOT NULL PRIMARY KEY,
  c_tinyint TINYINT, c_tinyint_u TINYINT UNSIGNED, c_bool TINYINT(1),
  c_smallint SMALLINT, c_smallint_u SMALLINT UNSIGNED,
  c_mediumint MEDIUMINT, c_mediumint_u MEDIUMINT UNSIGNED,
  c_int INT, c_int_u INT UNSIGNED, c_bigint BIGINT, c_bigint_u BIGINT UNSIGNED,
  c_decimal DECIMAL(65,30), c_money DECIMAL(12,2),
  c_float FLOAT, c_double DOUBLE,
  c_char CHAR(10), c_varchar VARCHAR(255), c_tinytext TINYTEXT, c_text TEXT, c_longtext LONGTEXT,
  c_binary BINARY(4), c_varbinary VARBINARY(64), c_blob BLOB, c_longblob LONGBLOB,
  c_enum ENUM('small','medium','large','it''s','a,b'), c_set SET('a','b','c'),
  c_bit1 BIT(1), c_bit64 BIT(64),
  c_date DATE, c_datetime DATETIME, c_datetime6 DATETIME(6), c_timestamp TIMESTAMP(3) NULL,
  c_time TIME(6), c_year YEAR,
  c_json JSON,
  c_geom GEOMETRY, c_point POINT
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO zoo VALUES
(1, -128, 255, 1, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
 -9223372036854775808, 18446744073709551615,
 '-99999999999999999999999999999999999.999999999999999999999999999999', 1234567890.12,
 -3.40282e38, 1.7976931348623157e308,
 'abc', 'héllo wörld 😀 𝄞 中文', '', 'tab\there\nnewline\\backslash', REPEAT('x', 100000),
 X'00FF10AB', X'DEADBEEF00', X'00', REPEAT(X'A5', 1100000),
 'it''s', 'a,c', b'1', b'1111111111111111111111111111111111111111111111111111111111111111',
 '1000-01-01', '9999-12-31 23:59:59', '2024-02-29 13:45:00.123456', '2038-01-19 03:14:07.999',
 '-838:59:59.000000', 2155,
 '{"k": [1, 2.5, null, "😀"], "a": {"b": true}}',
 ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))', 0), ST_GeomFromText('POINT(1.5 -2.25)', 4326)),
(2, 127, 0, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0,
 '99999999999999999999999999999999999.999999999999999999999999999999', -0.01,
 1.17549e-38, -2.2250738585072014e-308,
 '', '', 'x', '', '',
 X'00000000', X'', X'', X'',
 'small', '', b'0', b'0',
 '2000-01-01', '1000-01-01 00:00:00', '1970-01-01 00:00:00.000001', '1970-01-01 00:00:01',
 '838:59:59.999999', 1901,
 '[]', ST_GeomFromText('LINESTRING(0 0,1 1,2 3)'), ST_GeomFromText('POINT(0 0)')),
(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(4, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, '0.000000000000000000000000000001', 0, 0, -0.0,
 'ü', 'ß∂ƒ©˙∆˚¬…æ', 'NULL', '\\N', 'quote '' and "double"',
 X'01020304', X'0A0D09', X'5C4E', X'00',
 'large', 'a,b,c', b'1', b'1000000000000000000000000000000000000000000000000000000000000000',
 '2020-06-15', '2020-06-15 12:00:00', '2020-06-15 12:00:00.5', '2020-06-15 12:00:00.5',
 '00:00:00', 2000,
 '{"nested": {"deep": [{"x": 1}]}, "unicode": "中文", "num": 1.5e10}',
 ST_GeomFromText('MULTIPOINT((1 1),(2 2))'), ST_GeomFromText('POINT(179.999 -89.999)', 4326));

-- MySQL zero dates: stored when the sql_mode allows them.
SET SESSION sql_mode = '';
INSERT INTO zoo (id, c_date, c_datetime, c_datetime6, c_timestamp)
VALUES (5, '0000-00-00', '0000-00-00 00:00:00', '2021-00-00 10:11:12.5', '0000-00-00 00:00:00');
