console.log("setup placeholder")
