-- A small DVD-rental-style schema (written for this project, in the spirit of the public
-- Sakila sample) with every kind of schema object a migration must account for: enum, set and
-- year columns, an AUTO_INCREMENT counter ahead of the data, virtual and stored generated
-- columns, a fulltext index, foreign keys with every action, a partitioned table, views (one
-- on another), triggers, a function, a procedure, an event, a sequence, comments and ON UPDATE
-- defaults.
CREATE TABLE language (
  language_id tinyint unsigned NOT NULL AUTO_INCREMENT,
  name char(20) NOT NULL,
  last_update timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),
  PRIMARY KEY (language_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='spoken languages';

CREATE TABLE film (
  film_id smallint unsigned NOT NULL AUTO_INCREMENT,
  title varchar(128) NOT NULL COMMENT 'the title as printed',
  description text,
  release_year year DEFAULT NULL,
  language_id tinyint unsigned NOT NULL,
  rental_rate decimal(4,2) NOT NULL DEFAULT 4.99,
  rating enum('G','PG','PG-13','R','NC-17') DEFAULT 'G',
  special_features set('Trailers','Commentaries','Deleted Scenes','Behind the Scenes'),
  title_len int GENERATED ALWAYS AS (char_length(title)) VIRTUAL,
  title_upper varchar(128) GENERATED ALWAYS AS (upper(title)) STORED,
  last_update timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),
  PRIMARY KEY (film_id),
  KEY idx_title (title),
  FULLTEXT KEY ft_description (description),
  CONSTRAINT fk_film_language FOREIGN KEY (language_id) REFERENCES language (language_id)
    ON UPDATE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE actor (
  actor_id smallint unsigned NOT NULL AUTO_INCREMENT,
  first_name varchar(45) NOT NULL,
  last_name varchar(45) NOT NULL,
  last_update timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),
  PRIMARY KEY (actor_id),
  KEY idx_actor_last_name (last_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE film_actor (
  actor_id smallint unsigned NOT NULL,
  film_id smallint unsigned NOT NULL,
  PRIMARY KEY (actor_id, film_id),
  CONSTRAINT fk_film_actor_actor FOREIGN KEY (actor_id) REFERENCES actor (actor_id)
    ON DELETE CASCADE ON UPDATE CASCADE,
  CONSTRAINT fk_film_actor_film FOREIGN KEY (film_id) REFERENCES film (film_id)
    ON DELETE RESTRICT ON UPDATE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Partitioned by range of the year; the primary key includes the partitioning column.
CREATE TABLE rental (
  rental_id int NOT NULL AUTO_INCREMENT,
  rental_date datetime NOT NULL,
  film_id smallint unsigned NOT NULL,
  amount decimal(5,2) NOT NULL,
  PRIMARY KEY (rental_id, rental_date)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
PARTITION BY RANGE (year(rental_date)) (
  PARTITION p2021 VALUES LESS THAN (2022),
  PARTITION p2022 VALUES LESS THAN (2023),
  PARTITION pmax VALUES LESS THAN MAXVALUE
);

CREATE TABLE film_text (
  film_id smallint unsigned NOT NULL,
  title varchar(255) NOT NULL,
  PRIMARY KEY (film_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE VIEW actor_info AS
  SELECT a.actor_id, concat(a.first_name, ' ', a.last_name) AS full_name,
         count(fa.film_id) AS films
  FROM actor a LEFT JOIN film_actor fa ON fa.actor_id = a.actor_id
  GROUP BY a.actor_id, a.first_name, a.last_name;
CREATE VIEW busy_actors AS SELECT actor_id, full_name FROM actor_info WHERE films > 1;

-- Sent in one multi-statement query (no DELIMITER: the server parses compound statements).
CREATE TRIGGER ins_film AFTER INSERT ON film FOR EACH ROW BEGIN
  INSERT INTO film_text (film_id, title) VALUES (new.film_id, new.title);
END;
CREATE TRIGGER upd_film AFTER UPDATE ON film FOR EACH ROW BEGIN
  IF (old.title != new.title) THEN
    UPDATE film_text SET title = new.title WHERE film_id = old.film_id;
  END IF;
END;
CREATE FUNCTION film_count(p_language tinyint unsigned) RETURNS int READS SQL DATA
BEGIN
  DECLARE n int;
  SELECT count(*) INTO n FROM film WHERE language_id = p_language;
  RETURN n;
END;
CREATE PROCEDURE bump_rates(IN pct decimal(5,2))
BEGIN
  UPDATE film SET rental_rate = rental_rate * (1 + pct / 100);
END;
CREATE SEQUENCE invoice_seq START WITH 100 INCREMENT BY 5 NOCACHE;
SELECT NEXTVAL(invoice_seq), NEXTVAL(invoice_seq);  -- 100, 105: the next one is 110
CREATE EVENT nightly_cleanup ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM film_text WHERE title = '';

INSERT INTO language (name) VALUES ('English'), ('Italian'), ('Japanese'), ('Mandarin');
DELETE FROM language WHERE name = 'Mandarin';  -- the counter stays at 5
INSERT INTO film (title, description, release_year, language_id, rental_rate, rating,
                  special_features) VALUES
  ('ACADEMY DINOSAUR', 'An epic drama', 2006, 1, 0.99, 'PG', 'Deleted Scenes,Behind the Scenes'),
  ('ACE GOLDFINGER', NULL, 2006, 1, 4.99, 'G', 'Trailers'),
  ('ADAPTATION HOLES', 'A tale', NULL, 2, 2.99, 'NC-17', ''),
  ('AFFAIR PREJUDICE', 'Ünïcödé ✓', 1999, 3, 2.99, NULL, NULL);
INSERT INTO actor (first_name, last_name) VALUES
  ('PENELOPE', 'GUINESS'), ('NICK', 'WAHLBERG'), ('ED', 'CHASE'), ('GONE', 'SOON');
DELETE FROM actor WHERE first_name = 'GONE';
INSERT INTO film_actor VALUES (1, 1), (1, 2), (2, 1), (3, 3), (3, 4);
INSERT INTO rental (rental_date, film_id, amount) VALUES
  ('2021-06-01 10:00:00', 1, 2.99), ('2022-01-31 23:59:59', 2, 0.99),
  ('2022-12-31 00:00:00', 3, 5.99), ('2024-02-29 12:00:00', 4, 9.99);
