<?php
// lockcheck adapter: Symfony Lock CombinedStore + ConsensusStrategy over all nodes, PHP's Redlock (clients/php/symfony.php).
require_once __DIR__ . "/symfony.php";
lc_symfony_main(true, $argv);
