package storetest

import "os"

var getenv = os.Getenv
