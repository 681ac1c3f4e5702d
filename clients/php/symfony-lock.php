<?php
// lockcheck adapter: Symfony Lock RedisStore on the first node (clients/php/symfony.php).
require_once __DIR__ . "/symfony.php";
lc_symfony_main(false, $argv);
